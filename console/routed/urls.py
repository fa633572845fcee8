"""The routed-run pages, under ``/routed/`` (included by ``console.urls``, which
registers the ``id`` converter every detail URL uses)."""

from django.urls import path

from console.routed import views

urlpatterns = [
    path("workflows", views.workflow_list, name="routed_workflows"),
    path("workflows/<id:workflow_id>", views.workflow_detail, name="routed_workflow"),
    path("deployments", views.deployments, name="routed_deployments"),
    path("invocations", views.invocations, name="routed_invocations"),
    path("tiles", views.dashboard_tiles, name="routed_tiles"),
]

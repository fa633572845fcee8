"""Every route of the API, under /api/v1/ (docs/api.md; the OpenAPI document lists
each one, tests/console/api/test_openapi.py checks that it does)."""

from django.urls import path

from console.api import views

urlpatterns = [
    path("works", views.work_list, name="api_works"),
    path("works/<id:work_id>", views.work_detail, name="api_work"),
    path("events", views.event_list, name="api_events"),
    path("workflows", views.workflow_list, name="api_workflows"),
    path("workflows/<id:workflow_id>", views.workflow_detail, name="api_workflow"),
    path("openapi.json", views.openapi, name="api_openapi"),
]

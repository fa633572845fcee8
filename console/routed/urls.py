"""Every routed-run URL, under ``/routed/`` (included by ``console.urls``, which
registers the ``id`` converter every detail URL uses): the pages, then one route and
one view per operator action, named ``RoutedAction.url_name``. An action's name comes
first in its path, so no ID can be mistaken for one."""

from django.urls import path

from console.http import by_method
from console.routed import bulk, control, deploy_actions, views

urlpatterns = [
    path("workflows", views.workflow_list, name="routed_workflows"),
    path("workflows/<id:workflow_id>", views.workflow_detail, name="routed_workflow"),
    path("deployments", views.deployments, name="routed_deployments"),
    path("invocations", views.invocations, name="routed_invocations"),
    path("tiles", views.dashboard_tiles, name="routed_tiles"),
    # Operator actions (console/actions/routed.py): GET confirms, POST acts.
    path("actions/pause/<id:workflow_id>", control.pause_workflow, name="routed_pause"),
    path("actions/resume/<id:workflow_id>", control.resume_workflow, name="routed_resume"),
    path("actions/cancel/<id:workflow_id>", control.cancel_workflow, name="routed_cancel"),
    path("actions/restart/<id:workflow_id>", control.restart_workflow, name="routed_restart"),
    path("actions/continue/<id:workflow_id>", control.continue_workflow, name="routed_continue"),
    path(
        "actions/amend-limits/<id:workflow_id>",
        control.amend_limits,
        name="routed_amend_limits",
    ),
    path(
        "actions/deployment/deactivate/<id:deployment_id>",
        deploy_actions.deactivate_deployment,
        name="routed_deactivate",
    ),
    path(
        "actions/deployment/activate/<id:deployment_id>",
        deploy_actions.activate_deployment,
        name="routed_activate",
    ),
    path(
        "actions/alias/repoint/<id:alias>",
        deploy_actions.repoint_alias,
        name="routed_repoint_alias",
    ),
    path(
        "actions/bulk",
        by_method(get=bulk.bulk_confirm, post=bulk.bulk_apply),
        name="routed_bulk",
    ),
]

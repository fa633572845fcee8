"""Every route of the API, under /api/v1/ (docs/api.md; the OpenAPI document lists
each one, tests/console/api/test_openapi.py checks that it does)."""

from django.urls import path

from console.api import actions, views

urlpatterns = [
    path("works", views.work_list, name="api_works"),
    path("works/<id:work_id>", views.work_detail, name="api_work"),
    path("events", views.event_list, name="api_events"),
    path("workflows", views.workflow_list, name="api_workflows"),
    path("workflows/<id:workflow_id>", views.workflow_detail, name="api_workflow"),
    # Actions: POST, the action's name first so that no ID can be taken for one.
    path("actions/cancel/<id:work_id>", actions.cancel_work, name="api_cancel_work"),
    path("actions/retry/<id:work_id>", actions.retry_work, name="api_retry_work"),
    path("actions/bulk", actions.bulk, name="api_bulk"),
    path(
        "actions/pause-workflow/<id:workflow_id>", actions.pause_workflow, name="api_pause_workflow"
    ),
    path(
        "actions/resume-workflow/<id:workflow_id>",
        actions.resume_workflow,
        name="api_resume_workflow",
    ),
    path(
        "actions/cancel-workflow/<id:workflow_id>",
        actions.cancel_workflow,
        name="api_cancel_workflow",
    ),
    path("openapi.json", views.openapi, name="api_openapi"),
]

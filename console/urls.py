from django.urls import include, path, register_converter

from console import misc, readiness
from console.api import pages as api_tokens
from console.causation import views as causation
from console.converters import IdConverter
from console.dashboard import views as dashboard
from console.events import views as events
from console.history import views as history
from console.http import by_method
from console.keys import views as keys
from console.kv import views as kv
from console.metrics import views as metrics
from console.operate import bulk
from console.operate import views as operate
from console.run_records import views as run_records
from console.runtime import artifacts, attempt
from console.runtime import views as runtime
from console.saved import views as saved
from console.triage import views as triage
from console.works import compare
from console.works import views as works

# IDs are opaque strings that may contain "/": detail URLs take the rest of the path,
# and action URLs put the action first so no Work ID can be mistaken for one. The
# "id" converter keeps dot segments of an ID from a browser's path normalisation.
register_converter(IdConverter, "id")

urlpatterns = [
    path("", works.work_list, name="home"),
    # The page's name first, as attempts/ and actions/ are: "works/<id>/compare"
    # could also be the Work page of an ID ending in "/compare".
    path("compare/<id:work_id>", compare.compare_attempts, name="compare_attempts"),
    path("causation/<id:work_id>", causation.work_causation, name="work_causation"),
    path("changes", history.store_changes, name="changes"),
    path("changes/<id:work_id>", history.work_changes, name="work_changes"),
    path("works/<id:work_id>", works.work_detail, name="work_detail"),
    path("actions/cancel/<id:work_id>", operate.cancel_work, name="cancel_work"),
    path("actions/retry/<id:work_id>", operate.retry_work, name="retry_work"),
    path(
        "actions/bulk",
        by_method(get=bulk.bulk_confirm, post=bulk.bulk_apply),
        name="bulk_action",
    ),
    path("actions/bulk/review", bulk.bulk_review, name="bulk_review"),
    path("errors", triage.error_groups, name="errors"),
    path("actions/bulk/progress", bulk.bulk_progress, name="bulk_progress"),
    path("actions/bulk/resume", bulk.bulk_resume, name="bulk_resume"),
    path("events", events.event_list, name="events"),
    path("events/<id:event_id>", events.event_detail, name="event_detail"),
    path("operators/<id:name>", events.operator_actions, name="operator"),
    path("keys", keys.key_detail, name="key"),
    path("executions", runtime.executions, name="executions"),
    path(
        "executions/<id:execution_id>/artifacts/<str:artifact_id>",
        artifacts.artifact_download,
        name="artifact",
    ),
    path("attempts/<id:execution_id>", attempt.attempt_detail, name="attempt"),
    path("waits", runtime.waits, name="waits"),
    path("timers", runtime.timers, name="timers"),
    path("timers/ahead", runtime.timers_ahead, name="timers_ahead"),
    path("scopes", runtime.scopes, name="scopes"),
    # Namespaces, keys and prefixes travel in the query string (console/kv/filters.py).
    path("kv", kv.kv_inspector, name="kv"),
    path("run-records", run_records.run_record_list, name="run_records"),
    path("run-records/<id:run_id>", run_records.run_record_detail, name="run_record"),
    # The section's URLs before the rename (issue 33): moved permanently, path and query kept.
    path("runs", run_records.runs_moved),
    path("runs/<id:rest>", run_records.runs_moved),
    # Routed runs: every page and action in console/routed/urls.py.
    path("routed/", include("console.routed.urls")),
    path("dashboard", dashboard.dashboard, name="dashboard"),
    path("dashboard/<id:scope_id>", dashboard.dashboard, name="dashboard_scope"),
    path("preferences/poll", misc.poll_interval, name="poll_interval"),
    path("preferences/theme", misc.theme, name="theme"),
    path("preferences/columns", saved.work_columns, name="work_columns"),
    path("views", saved.saved_views, name="saved_views"),
    path("views/save", saved.save_view, name="save_view"),
    path("views/<int:pk>/rename", saved.rename_view, name="rename_view"),
    path("views/<int:pk>/delete", saved.delete_view, name="delete_view"),
    # The API for automation (docs/api.md) and the page of one's API tokens.
    path("api/v1/", include("console.api.urls")),
    path("account/tokens", api_tokens.token_page, name="api_tokens"),
    path("account/tokens/<int:pk>/revoke", api_tokens.revoke_token, name="api_token_revoke"),
    path("healthz", misc.healthz, name="healthz"),
    path("readyz", readiness.readyz, name="readyz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("favicon.ico", misc.favicon, name="favicon"),
]

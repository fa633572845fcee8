from django.urls import path, re_path

from console.views import artifacts, dashboard, events, misc, operate, runtime, works
from console.views.runs import run_detail, run_list

# IDs are opaque strings that may contain "/": detail URLs take the rest of the path,
# and action URLs put the action first so no Work ID can be mistaken for one.
urlpatterns = [
    path("", works.work_list, name="home"),
    path("works/<path:work_id>", works.work_detail, name="work_detail"),
    re_path(
        r"^actions/(?P<action>cancel|retry)/(?P<work_id>.+)$",
        operate.work_action,
        name="work_action",
    ),
    path("actions/bulk", operate.bulk_action, name="bulk_action"),
    path("events", events.event_list, name="events"),
    path("events/<path:event_id>", events.event_detail, name="event_detail"),
    path("executions", runtime.executions, name="executions"),
    path(
        "executions/<path:execution_id>/artifacts/<str:artifact_id>",
        artifacts.artifact_download,
        name="artifact",
    ),
    path("waits", runtime.waits, name="waits"),
    path("timers", runtime.timers, name="timers"),
    path("scopes", runtime.scopes, name="scopes"),
    path("runs", run_list, name="runs"),
    path("runs/<path:run_id>", run_detail, name="run_detail"),
    path("dashboard", dashboard.dashboard, name="dashboard"),
    path("dashboard/<path:scope_id>", dashboard.dashboard, name="dashboard_scope"),
    path("preferences/poll", misc.poll_interval, name="poll_interval"),
    path("healthz", misc.healthz, name="healthz"),
]

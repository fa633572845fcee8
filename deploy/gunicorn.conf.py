"""gunicorn's settings for one console host (docs/deploy.md).

Every console host runs ``gunicorn -c deploy/gunicorn.conf.py conduit.wsgi --bind ADDR``
behind the TLS proxy (deploy/nginx/conduit.conf); the deploy test suite
(tests/deploy/) starts its two hosts with this same file. Anything here can be
overridden on the command line or in ``GUNICORN_CMD_ARGS``. ``make run``
(scripts/run.sh) starts its server with it too.
"""

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

# gthread workers: a worker's threads share its PostgreSQL connection pool
# (CONDUIT_DB_POOL_SIZE), and a long bulk action holds one thread, not a process.
worker_class = "gthread"
workers = 2
threads = 4
# A bulk action of 10,000 Work runs inside its request for about half a minute; the
# proxy's read timeout (300 s) bounds it, not gunicorn (gthread workers heartbeat from
# their main loop, so this only catches a worker whose loop is stuck).
timeout = 60
graceful_timeout = 30
# Which proxy is believed about the client's address and scheme is the console's own
# setting, CONDUIT_TRUSTED_PROXIES (docs/deploy.md), not gunicorn's forwarded_allow_ips.
# One line per request on stdout (the journal under systemd).
accesslog = "-"
# JSON lines with CONDUIT_LOG_FORMAT=json, as the console's own (docs/logging.md); text
# otherwise, gunicorn's usual lines.
logger_class = "conduit.logs.GunicornLogger"
# gunicorn's control socket (a per-user unix socket in ~/.gunicorn) is for interactive
# use; two hosts on one machine would share it.
control_socket_disable = True

# ---------------------------------------------------------------- /metrics
#
# prometheus_client's multiprocess mode (docs/metrics.md, "Processes"): each worker
# keeps its counters and histograms in files under PROMETHEUS_MULTIPROC_DIR and
# /metrics sums every worker's, whichever worker answers the scrape. The folder must
# start empty and belong to this master: a private temporary folder unless the
# environment names one (whose stale *.db files are removed at start). Set here, in the
# master before any worker forks, so every worker inherits it.
_metrics_made: list[str] = []


def on_starting(server: object) -> None:
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
    if folder:
        for stale in Path(folder).glob("*.db"):
            stale.unlink()
    else:
        folder = tempfile.mkdtemp(prefix="conduit-metrics-")
        _metrics_made.append(folder)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder


def child_exit(server: object, worker: Any) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server: object) -> None:
    for folder in _metrics_made:
        shutil.rmtree(folder, ignore_errors=True)

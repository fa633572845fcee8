"""gunicorn's settings for the console (``gunicorn -c python:conduit.gunicorn_conf``):
scripts/run.sh uses it, and docs/deploy.md tells a deployment to.

- prometheus_client's multiprocess mode (docs/metrics.md, "Processes"): with
  ``PROMETHEUS_MULTIPROC_DIR`` set, a worker that exits is marked dead, so its files
  stop counting as a live process's.
"""

from __future__ import annotations

import os
from typing import Any


def child_exit(server: Any, worker: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]

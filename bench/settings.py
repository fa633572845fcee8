"""Settings of the benchmark's child processes: the project's settings, plus

- a Django admin over the Work table at ``/bench-admin/`` (benchmark 3's baseline),
  registered only here, never in the product;
- ``testserver`` as an allowed host, for django.test.Client with DEBUG off;
- static files collected once per run into BENCH_STATIC_ROOT, so pages render with
  the production storage (manifest) rather than DEBUG's finders.
"""

import os
from pathlib import Path

from conduit.settings import *  # noqa: F403 - this module extends the project's settings
from conduit.settings import ALLOWED_HOSTS, DATA_DIR

ROOT_URLCONF = "bench.urls"
ALLOWED_HOSTS = [*ALLOWED_HOSTS, "testserver"]
STATIC_ROOT = Path(os.environ.get("BENCH_STATIC_ROOT", str(DATA_DIR / "static")))

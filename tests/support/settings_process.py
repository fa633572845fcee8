"""conduit.settings imported in a new interpreter, with only the CONDUIT_* and CONSOLE_*
variables a test gives (the suite's own are dropped), to see what a deployment's
environment makes of the settings or how it stops startup."""

import os
import subprocess
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[2]


def settings_process(tmp_path: Path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -c code`` with DJANGO_SETTINGS_MODULE=conduit.settings, the data
    folder in ``tmp_path`` and ``env`` on top of a clean environment."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CONDUIT_", "CONSOLE_")) and k != "DATABASE_URL"
    }
    clean |= {"CONDUIT_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "conduit.settings"}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=BASE_DIR,
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

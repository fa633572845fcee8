"""The one place storage hands its process environment to a child process.

Storage never reads its configuration from the environment (settings decide), but the
tools a backup or restore runs (``pg_dump``, ``pg_restore``, a fencing ``manage.py``)
must start as this process was started: the same interpreter paths, locale and
settings module. Python can only add a variable to an inherited environment by
copying it, so that copy is made here and nowhere else; the layering test allows
``os.environ`` in this module alone.
"""

from __future__ import annotations

import os


def child_environment(extra: dict[str, str], *, drop_prefix: str = "") -> dict[str, str]:
    """This process's environment without the variables starting with ``drop_prefix``
    (when given), plus ``extra``."""
    inherited = {
        k: v for k, v in os.environ.items() if not (drop_prefix and k.startswith(drop_prefix))
    }
    return inherited | extra

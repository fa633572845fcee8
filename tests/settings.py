"""Settings of the test suite: pytest-django loads this module (``DJANGO_SETTINGS_MODULE``
in pyproject.toml), before any conftest.py and before Django reads a setting.

It says "this is a test run" explicitly instead of ``conduit.settings`` guessing it from
the modules loaded: ``CONDUIT_TESTING`` is set before the project's settings read it,
and in ``os.environ``, so the processes tests start (``manage.py``, ``python -c``
children that name ``conduit.settings`` themselves) get the same test settings: the
per-process test database, fast hashers, no collectstatic.
"""

import os

# Forced, not defaulted: a CONDUIT_TESTING=0 left in the shell must never point the
# suite at the development database.
os.environ["CONDUIT_TESTING"] = "1"

from conduit.settings import *  # noqa: F403 - the project's settings, under test

"""Test-wide setup. The test settings (CONDUIT_TESTING=1, exported to the processes tests
start) are tests/settings.py, which pytest-django loads before any conftest.py.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from tests.support import engine_neutral, template_db

# Hypothesis' wall-clock limits (a 200 ms deadline per example, "input generation is
# slow") measure the machine, not the code: make test runs two engines' suites at once,
# over xdist workers, on 2 cores. The same examples are drawn and checked without them.
hypothesis_settings.register_profile(
    "suite", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.load_profile("suite")

# Tests that prove one engine's mechanism carry its marker; on the other engine they are
# deselected (reported in the header and the summary), never skipped: the guarantee
# they prove belongs to that engine alone.
ENGINE_MARKERS = {"sqlite": "sqlite_only", "postgresql": "postgres_only"}
TESTS = Path(__file__).resolve().parent


def _engine() -> str:
    from django.conf import settings

    return "postgresql" if settings.POSTGRES else "sqlite"


def pytest_report_header(config: pytest.Config) -> str:
    from django.conf import settings

    if settings.POSTGRES:
        return (
            f"database: PostgreSQL, test database {settings.TEST_DATABASE} "
            "(DATABASE_URL); sqlite_only tests are deselected"
        )
    return "database: SQLite (set DATABASE_URL for PostgreSQL); postgres_only tests are deselected"


# tryfirst: the marks must be on the items before pytest's own -m deselection reads them.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    engine_neutral.mark(items)
    engine = _engine()
    other = {marker for name, marker in ENGINE_MARKERS.items() if name != engine}
    keep, drop = [], []
    for item in items:
        (drop if any(item.get_closest_marker(m) for m in other) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


class SlowFirst:
    """The modules holding a ``slow`` test first, whole and in their order; the rest after
    them, in theirs. make test's xdist (--dist loadgroup) hands out the browser and
    deploy groups first and then the other tests in this order, one or two at a time to
    the worker that is free: a test of minutes taken last would leave the other workers
    idle until it ends; taken first, it runs beside the short ones. Grouped modules keep
    their place (their group goes to one worker whole, whatever the order).

    Of those, ``LONGEST`` first: the longest single test in CI's logs, which the other
    slow ones, taken before it on the one worker outside the browser groups, pushed to
    the end of the SQLite job (868 s of its 2,126, 7 December).

    A plugin of its own: it must run after the packages' conftest hooks have put the
    browser and deploy tests in their groups (trylast), and this conftest's own hook runs
    first (tryfirst)."""

    LONGEST = ("bench/test_harness.py",)  # relative to tests/, longest first

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        slow = {
            item.path
            for item in items
            if item.get_closest_marker("slow") and not item.get_closest_marker("xdist_group")
        }
        longest = {TESTS / name: n for n, name in enumerate(self.LONGEST)}

        def rank(item: pytest.Item) -> tuple[int, int]:
            if item.path in longest:
                return (0, longest[item.path])
            return (1 if item.path in slow else 2, 0)

        items.sort(key=rank)  # stable: the order within each


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(SlowFirst(), "conduit-slow-first")


@pytest.fixture(scope="session")
def django_db_modify_db_settings() -> None:
    """No suffix on the test database names. pytest-django would add the xdist worker's
    (test_conduit_<pid>.sqlite3_gw0), but the names are per process already
    (conduit.settings; tests/settings.py for xdist workers), and the processes the
    tests start find the database by the name conduit.settings exported."""


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: object) -> Iterator[None]:
    """pytest-django's database setup, plus: close every alias's connection pool before
    the test database is dropped. Django closes only the default alias's pool; the
    "view" mirror's pooled sessions would keep PostgreSQL from dropping the database.

    And: a transactional test ends with the migrated database copied back from a template
    (tests/support/template_db.py), not with Django's flush of every table."""
    from django.db import connections
    from django.test import TransactionTestCase

    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        template = template_db.capture(connections["default"])
    flush = TransactionTestCase._fixture_teardown

    def _fixture_teardown(case: TransactionTestCase) -> None:
        if case.available_apps is not None or case.serialized_rollback:
            flush(case)  # Django's own cases for these; the suite uses neither
            return
        for alias in case._databases_names(include_mirrors=False):
            template_db.restore(connections[alias], template)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TransactionTestCase, "_fixture_teardown", _fixture_teardown)
        yield
    template.close()

    for conn in connections.all():
        conn.close()
        close_pool = getattr(conn, "close_pool", None)
        if close_pool is not None:
            close_pool()
    if connections["default"].vendor == "postgresql":
        _end_other_sessions(connections["default"].settings_dict)


def _end_other_sessions(settings_dict: dict[str, object]) -> None:
    """End the sessions a test thread left open (a pool closes only the connections
    returned to it), so that DROP DATABASE does not fail on "being accessed"."""
    import psycopg

    params = {
        "dbname": settings_dict["NAME"],
        "user": settings_dict["USER"],
        "password": settings_dict["PASSWORD"],
        "host": settings_dict["HOST"],
        "port": settings_dict["PORT"],
    }
    with psycopg.connect(**{k: v for k, v in params.items() if v}, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


def pytest_sessionstart(session: pytest.Session) -> None:
    # Django replaces an old test database by deleting only the main file. A -wal left by
    # a crashed run would then be replayed into the new, unrelated database.
    if session.config.getoption("reuse_db", default=False):
        return
    from django.conf import settings

    for suffix in ("", "-wal", "-shm"):
        path = settings.TEST_SQLITE_PATH.with_name(settings.TEST_SQLITE_PATH.name + suffix)
        path.unlink(missing_ok=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # The per-process test database (see conduit.settings) is dropped by Django, but its
    # -wal and -shm companions are not; remove them so data/ does not fill up.
    if session.config.getoption("reuse_db", default=False):
        return
    from django.conf import settings

    for suffix in ("-wal", "-shm"):
        path = settings.TEST_SQLITE_PATH.with_name(settings.TEST_SQLITE_PATH.name + suffix)
        path.unlink(missing_ok=True)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # scripts/test-engines.sh (make test) prints this line in its verdict per engine.
    stats = terminalreporter.stats
    ran = sum(len(stats.get(k, [])) for k in ("passed", "failed", "xfailed", "xpassed"))
    terminalreporter.write_line(f"engine {_engine()}: {ran} tests ran")

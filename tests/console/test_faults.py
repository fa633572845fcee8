"""A read-only data folder, a full disk, a database that refuses writes or cannot be
reached (issue 30): the signed-in operator gets the console's own 503 page, never a
500 or a traceback; /healthz stays liveness and /readyz says which check failed.

SQLite's faults are real (tests/console/support/faults.py: a read-only bind mount, which root
cannot write through either, and a full tmpfs); PostgreSQL's are the server's own (a
database set read-only, a port nothing listens on)."""

import socket
import sqlite3

import pytest
from django.db import connections
from django.test import Client

from console.actions.common import new_token
from storage import WorkState
from storage.default import default_store
from tests.console import factories as f
from tests.console.conftest import DB
from tests.console.support.faults import console_database, copy_database, fill, full_disk, read_only

pytestmark = DB

READ_PAGES = ["/", "/works/w1", "/events", "/dashboard", "/executions", "/routed/workflows"]


@pytest.fixture
def some_work():
    f.scope("acme")
    f.parked("w1", scope_id="acme")
    f.event("e1", work_id="w1")


def assert_console_503(response, *reasons):
    assert response.status_code == 503
    html = response.content.decode()
    assert "Database unavailable" in html
    assert 'class="panel error-page"' in html  # the console's page, not Django's
    assert "Traceback" not in html
    assert response["Retry-After"] == "5"
    for reason in reasons:
        assert reason in html


def readiness(client):
    response = client.get("/readyz")
    return response.status_code, response.content.decode().splitlines()


def test_a_healthy_console_is_ready(client, some_work):
    status, lines = readiness(client)

    assert status == 200
    assert lines[0] == "ready"
    assert "database reachable: ok" in lines
    assert "database writable: ok" in lines


def test_readiness_writes_nothing(client, some_work, django_assert_num_queries):
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT COUNT(*), MAX(expire_date) FROM django_session")
        before = cursor.fetchone()

    assert readiness(client)[0] == 200

    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT COUNT(*), MAX(expire_date) FROM django_session")
        assert cursor.fetchone() == before


# ---------------------------------------------------------------- SQLite


@pytest.fixture
def read_only_folder(as_alice, some_work, tmp_path):
    """The console's database in a folder nobody may write, after a clean stop."""
    folder = tmp_path / "data"
    folder.mkdir()
    path = copy_database(folder)
    with read_only(folder), console_database(path):
        yield


@pytest.mark.sqlite_only
@pytest.mark.parametrize("path", READ_PAGES)
def test_a_read_only_data_folder_is_a_503_page_for_a_signed_in_operator(
    as_alice, read_only_folder, path
):
    assert_console_503(as_alice.get(path), "unable to open database file")


@pytest.mark.sqlite_only
def test_a_read_only_data_folder_refuses_sign_in_and_actions_with_a_503(as_alice, read_only_folder):
    cancel = as_alice.post("/actions/cancel/w1", {"reason": "stop", "token": new_token()})
    assert_console_503(cancel)
    sign_in = Client().post("/accounts/login/", {"username": "alice", "password": "password"})
    assert_console_503(sign_in)


@pytest.mark.sqlite_only
def test_a_read_only_data_folder_is_alive_but_not_ready(client, read_only_folder):
    assert client.get("/healthz").status_code == 200

    status, lines = readiness(client)

    assert status == 503
    assert lines[0] == "not ready"
    assert "database reachable: FAILED: unable to open database file" in lines
    assert "database writable: FAILED: unable to open database file" in lines


@pytest.fixture
def disk(as_alice, some_work, tmp_path, settings):
    """The console's database on a 4 MiB filesystem, open (so its -wal and -shm exist,
    as a running console keeps them), with READY_MIN_FREE_MB at 1."""
    settings.READY_MIN_FREE_MB = 1
    folder = tmp_path / "data"
    folder.mkdir()
    with full_disk(folder) as mounted:
        path = copy_database(mounted)
        keeper = sqlite3.connect(path)
        try:
            keeper.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            with console_database(path):
                yield mounted
        finally:
            keeper.close()


@pytest.mark.sqlite_only
def test_a_full_disk_refuses_actions_with_a_503_and_still_shows_the_pages(as_alice, disk):
    assert readiness(as_alice)[0] == 200
    fill(disk)

    cancel = as_alice.post("/actions/cancel/w1", {"reason": "stop", "token": new_token()})

    assert cancel.status_code == 503
    assert "database or disk is full" in cancel.content.decode()
    for path in READ_PAGES:  # a GET writes nothing, so the pages still read
        assert as_alice.get(path).status_code == 200, path


@pytest.mark.sqlite_only
def test_a_full_disk_is_not_ready_and_says_so(client, disk):
    fill(disk)
    assert client.get("/healthz").status_code == 200

    status, lines = readiness(client)

    assert status == 503
    assert "database reachable: ok" in lines
    assert any(line.startswith("disk space: FAILED: 0.0 MiB free") for line in lines), lines


# ---------------------------------------------------------------- PostgreSQL


@pytest.fixture
def read_only_database(as_alice, some_work):
    """The server refuses every write to the console's database, as a standby or an
    operator's ALTER DATABASE ... SET default_transaction_read_only would."""
    name = connections["default"].settings_dict["NAME"]
    with connections["default"].cursor() as cursor:
        cursor.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    _reconnect()
    try:
        yield
    finally:
        _reconnect()
        with connections["default"].cursor() as cursor:
            cursor.execute("SET default_transaction_read_only = off")
            cursor.execute(f'ALTER DATABASE "{name}" RESET default_transaction_read_only')
        _reconnect()


def _reconnect():
    """New sessions for both aliases (pooled ones kept the settings they began with)."""
    for alias in ("default", "view"):
        connections[alias].close()
        close_pool = getattr(connections[alias], "close_pool", None)
        if close_pool is not None:
            close_pool()


@pytest.mark.postgres_only
def test_a_database_that_refuses_writes_is_not_ready(client, read_only_database):
    status, lines = readiness(client)

    assert status == 503
    assert "database reachable: ok" in lines
    writable = next(line for line in lines if line.startswith("database writable"))
    assert "FAILED: cannot execute UPDATE in a read-only transaction" in writable


@pytest.mark.postgres_only
def test_a_database_that_refuses_writes_refuses_sign_in_with_a_503(client, read_only_database):
    response = client.post("/accounts/login/", {"username": "alice", "password": "password"})

    assert_console_503(response, "read-only transaction")


@pytest.mark.postgres_only
def test_a_database_that_refuses_writes_still_shows_the_pages_and_refuses_actions(
    as_alice, read_only_database
):
    for path in READ_PAGES:  # a GET writes nothing
        assert as_alice.get(path).status_code == 200, path

    cancel = as_alice.post("/actions/cancel/w1", {"reason": "stop", "token": new_token()})

    # Storage's own translation: the database refuses writes for now (Unavailable, as
    # a read-only SQLite folder), a 503 to retry later, not a 403 ("you may not").
    assert cancel.status_code == 503
    assert cancel["Retry-After"] == "5"
    assert "read-only transaction" in cancel.content.decode()
    assert default_store().view(lambda tx: tx.work("w1")).state is WorkState.WAITING


@pytest.fixture
def unreachable(as_alice, some_work):
    """Both aliases pointed at a port nothing listens on: a server stopped."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    saved = {a: connections[a].settings_dict["PORT"] for a in ("default", "view")}
    # A request waits out the pool's timeout (10 s an alias, conduit/settings.py) before
    # its 503; a second here tells the same story without 20 s a test.
    pools = [
        connections[a].settings_dict["OPTIONS"]["pool"]
        for a in saved
        if isinstance(connections[a].settings_dict["OPTIONS"].get("pool"), dict)
    ]
    timeouts = [pool["timeout"] for pool in pools]
    _reconnect()
    for alias in saved:
        connections[alias].settings_dict["PORT"] = port
    for pool in pools:
        pool["timeout"] = 1
    try:
        yield
    finally:
        _reconnect()
        for alias, value in saved.items():
            connections[alias].settings_dict["PORT"] = value
        for pool, timeout in zip(pools, timeouts, strict=True):
            pool["timeout"] = timeout
        _reconnect()


@pytest.mark.postgres_only
@pytest.mark.parametrize("path", ["/", "/routed/workflows"])  # each waits out the pool
def test_an_unreachable_server_is_a_503_page(as_alice, unreachable, path):
    assert_console_503(as_alice.get(path))


@pytest.mark.postgres_only
def test_an_unreachable_server_refuses_actions_with_a_503(as_alice, unreachable):
    cancel = as_alice.post("/actions/cancel/w1", {"reason": "stop", "token": new_token()})

    assert_console_503(cancel)


@pytest.mark.postgres_only
def test_an_unreachable_server_is_alive_but_not_ready(client, unreachable):
    assert client.get("/healthz").status_code == 200

    status, lines = readiness(client)

    assert status == 503
    assert lines[0] == "not ready"
    assert lines[1].startswith("database reachable: FAILED: ")
    assert lines[2].startswith("database writable: FAILED: ")

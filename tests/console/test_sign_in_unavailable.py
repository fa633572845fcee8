"""Sign-in when the database cannot be written (a full disk, a read-only data folder) is
a clean 503 that says so, as operator actions already are (issue 20)."""

from contextlib import contextmanager

import pytest
from django.db import OperationalError, connection

from tests.console.conftest import DB

pytestmark = DB

WRITES = ("INSERT", "UPDATE", "DELETE")


@contextmanager
def writes_fail(message):
    """Every write on the default connection fails as the driver reports it."""

    def refuse(execute, sql, params, many, context):
        if sql.lstrip().upper().startswith(WRITES):
            raise OperationalError(message)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(refuse):
        yield


@pytest.mark.parametrize(
    "message", ["database or disk is full", "attempt to write a readonly database"]
)
@pytest.mark.parametrize("password", ["password", "wrong"])
def test_sign_in_without_a_writable_database_is_a_clean_503(client, alice, message, password):
    with writes_fail(message):
        response = client.post(
            "/accounts/login/", {"username": "alice", "password": password, "next": "/"}
        )

    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    html = response.content.decode()
    assert "Database unavailable" in html
    assert message in html
    assert "_auth_user_id" not in client.session


@pytest.mark.sqlite_only
def test_sign_in_on_a_read_only_sqlite_database_is_a_clean_503(client, alice):
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA query_only=1")  # what a read-only data folder looks like
    try:
        response = client.post("/accounts/login/", {"username": "alice", "password": "password"})
    finally:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA query_only=0")

    assert response.status_code == 503
    assert b"readonly" in response.content

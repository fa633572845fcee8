"""JSON log lines (issue 31): CONDUIT_LOG_FORMAT=json writes one JSON object a line
with the request's ID (the trusted proxy's X-Request-ID, else a new one, echoed in the
response), one line per operator action, and gunicorn's access lines in the same
format. Every line here is parsed as JSON."""

from __future__ import annotations

import io
import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from ipaddress import ip_network
from pathlib import Path
from typing import Any

import pytest

from conduit.logs import JsonFormatter, RequestIdFilter
from console.actions.common import new_token
from tests.console import factories as f
from tests.console.conftest import DB

REPO = Path(__file__).resolve().parents[2]
HEX32 = 32


@pytest.fixture
def logged() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """The records that reached the root logger so far, as the JSON handler of
    CONDUIT_LOG_FORMAT=json writes them, parsed back line by line."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        root.removeHandler(handler)


def test_a_line_is_one_json_object_with_the_documented_fields():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RequestIdFilter())
    log = logging.getLogger("tests.logs.fields")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("hello %s", "wörld", extra={"work_id": "w-1"})
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("failed")
    finally:
        log.removeHandler(handler)
        log.propagate = True

    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["message"] == "hello wörld"
    assert first["level"] == "WARNING"
    assert first["logger"] == "tests.logs.fields"
    assert first["request_id"] == ""  # outside a request
    assert first["work_id"] == "w-1"
    assert first["time"].endswith("+00:00")
    assert isinstance(first["process"], int)
    assert "ValueError: boom" in second["exc_info"]


@DB
def test_every_line_of_a_request_carries_its_minted_id(client, logged):
    response = client.get("/no/such/page")

    rid = response["X-Request-ID"]
    assert len(rid) == HEX32
    assert int(rid, 16) >= 0
    mine = [line for line in logged() if line["logger"] == "django.request"]
    assert mine
    assert all(line["request_id"] == rid for line in mine)
    assert client.get("/healthz")["X-Request-ID"] != rid


@DB
def test_a_trusted_proxys_request_id_is_kept(client, settings):
    settings.TRUSTED_PROXIES = [ip_network("10.0.0.1/32")]
    proxied = {"REMOTE_ADDR": "10.0.0.1", "HTTP_X_REQUEST_ID": "a1b2c3d4e5f6"}

    assert client.get("/healthz", **proxied)["X-Request-ID"] == "a1b2c3d4e5f6"


@DB
@pytest.mark.parametrize(
    ("remote", "given"),
    [
        ("198.51.100.7", "a1b2c3d4e5f6"),  # not from the proxy: anyone could send it
        ("10.0.0.1", 'x" injected'),  # from the proxy, but not an ID
        ("10.0.0.1", "x" * 129),
    ],
)
def test_an_untrusted_or_malformed_request_id_is_replaced(client, settings, remote, given):
    settings.TRUSTED_PROXIES = [ip_network("10.0.0.1/32")]
    got = client.get("/healthz", REMOTE_ADDR=remote, HTTP_X_REQUEST_ID=given)["X-Request-ID"]
    assert got != given
    assert len(got) == HEX32


@DB
def test_one_line_per_operator_action(as_alice, logged):
    f.work("w-live")
    f.completed("w-over")
    token = new_token()

    done = as_alice.post("/actions/cancel/w-live", {"reason": "stop", "token": token})
    refused = as_alice.post("/actions/cancel/w-over", {"reason": "stop", "token": new_token()})

    actions = [line for line in logged() if line["logger"] == "console.actions"]
    assert len(actions) == 2
    first, second = actions
    assert first["event"] == "operator_action"
    assert first["actor"] == "alice"
    assert first["action"] == "cancel_work"
    assert first["targets"] == ["w-live"]
    assert first["target_count"] == 1
    assert first["form_token"] == token
    assert first["result"] == "done"
    assert isinstance(first["duration_ms"], float)
    assert first["duration_ms"] >= 0
    assert first["request_id"] == done["X-Request-ID"]
    assert second["result"] == "refused"
    assert second["request_id"] == refused["X-Request-ID"]


@DB
def test_a_bulk_action_is_one_line_naming_its_targets(as_alice, logged):
    for i in range(3):
        f.exhausted(f"x{i}")
    from console.actions.work import do_bulk
    from storage.default import default_store

    do_bulk(
        default_store(),
        username="alice",
        action="retry",
        work_ids=["x0", "x1", "x2"],
        reason="again",
        token=new_token(),
    )

    [line] = [line for line in logged() if line["logger"] == "console.actions"]
    assert line["action"] == "bulk_retry_work"
    assert line["targets"] == ["x0", "x1", "x2"]
    assert line["result"] == "done"


def free_port() -> int:
    """A free port in this helper's range (18900-18999) on 127.0.0.1."""
    for port in range(18950, 19000):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 18950-18999")


@pytest.mark.multiprocess
def test_gunicorn_access_lines_are_json_with_the_request_id(tmp_path):
    """gunicorn with deploy/gunicorn.conf.py and CONDUIT_LOG_FORMAT=json: its access
    line for a request is JSON and carries the ID the console answered with (the
    trusted proxy's, here)."""
    port = free_port()
    env = os.environ | {
        "CONDUIT_LOG_FORMAT": "json",
        "CONDUIT_TRUSTED_PROXIES": "127.0.0.1",
        "CONDUIT_STATIC_ROOT": str(tmp_path / "static"),
    }
    out = (tmp_path / "out").open("w+")
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "deploy/gunicorn.conf.py", "--workers", "1",
         "--bind", f"127.0.0.1:{port}", "conduit.wsgi"],
        cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/healthz?probe=1"
        request = urllib.request.Request(url, headers={"X-Request-ID": "proxy-id-42"})
        for _ in range(100):
            try:
                with urllib.request.urlopen(request, timeout=2) as answer:  # noqa: S310
                    assert answer.headers["X-Request-ID"] == "proxy-id-42"
                    break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("gunicorn did not answer: " + (tmp_path / "out").read_text())
        time.sleep(0.3)  # the access line is written after the response
    finally:
        server.terminate()
        server.wait(timeout=30)
    text = (tmp_path / "out").read_text()
    parsed = [json.loads(line) for line in text.splitlines() if line.strip()]
    access = [p for p in parsed if p.get("event") == "access"]
    assert access, text
    line = access[0]
    assert line["logger"] == "gunicorn.access"
    assert line["request_id"] == "proxy-id-42"
    assert (line["method"], line["path"], line["query"], line["status"]) == (
        "GET",
        "/healthz",
        "probe=1",
        200,
    )
    assert line["remote_addr"] == "127.0.0.1"
    assert line["bytes"] == 2
    assert isinstance(line["duration_ms"], float)
    # gunicorn's own lines (startup, shutdown) are JSON too: parsed above, every one.
    assert any(p["logger"] == "gunicorn.error" for p in parsed)

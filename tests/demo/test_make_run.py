"""`make run` end to end: scripts/run.sh on a fresh data directory serves the console,
the simulator fills it, an operator signs in, and Ctrl-C stops everything."""

import contextlib
import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parents[2]
PASSWORD = "demo-run-password-42"
COUNT_EVENTS = (
    "import django; django.setup()\n"
    "from storage.default import default_store\n"
    "from storage import view\n"
    "print(view(default_store(), None, lambda tx: tx.latest_sequence()))\n"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def session_processes(sid: int) -> dict[int, str]:
    """Live processes of a session (pid -> command line), read from /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            state, session = fields[0], int(fields[3])
            if session == sid and state != "Z":
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
    return {pid: cmd.decode(errors="replace") for pid, cmd in found.items()}


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
@pytest.mark.multiprocess
def test_make_run_serves_a_live_console_and_stops_on_ctrl_c(tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    # A development run, not a test run: no CONDUIT_TESTING, its own data directory.
    # DATABASE_URL too: `make run` is the SQLite quick start whatever the suite runs on.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CONDUIT_", "CONSOLE_")) and k != "DATABASE_URL"
    }
    env |= {
        "CONDUIT_DATA_DIR": str(tmp_path),
        "CONDUIT_BIND": f"127.0.0.1:{port}",
        "CONDUIT_DEV_PASSWORD": PASSWORD,
        "DJANGO_SETTINGS_MODULE": "conduit.settings",
    }
    run = subprocess.Popen(
        [str(BASE_DIR / "scripts" / "run.sh")],
        cwd=BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's job is
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(run.stdout), daemon=True)
    reader.start()
    try:
        wait_for(lambda: _healthy(base), 120, f"/healthz at {base}\n" + "".join(lines[-30:]))
        _sign_in(base)

        def events() -> int:
            result = subprocess.run(
                [sys.executable, "-c", COUNT_EVENTS],
                cwd=BASE_DIR,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            )
            return int(result.stdout.strip())

        first = wait_for(events, 60, "the simulator's first Events")
        wait_for(lambda: events() > first, 60, "the Event count to grow")

        processes = session_processes(run.pid)
        assert any("manage.py simulate" in cmd for cmd in processes.values()), processes
        assert any("gunicorn" in cmd for cmd in processes.values()), processes
    finally:
        os.killpg(run.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
        try:
            run.wait(timeout=60)
        finally:
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGKILL)
    reader.join(timeout=10)

    assert run.returncode in (0, 130), "".join(lines[-40:])
    leftover = session_processes(run.pid)
    assert leftover == {}, leftover
    output = "".join(lines)
    # The sign-in details close the banner, the last lines before Ctrl-C: the
    # simulator's ticks and the access lines went to the log folder, not here.
    banner = output[output.index("Development operator") :]
    assert f"password: {PASSWORD}" in banner
    assert f"is up at {base}/" in banner
    assert "tick " not in banner
    assert '"GET /healthz' not in output
    logs = tmp_path / "logs"
    assert re.search(r"simulate: \d+ ticks as sim-", (logs / "simulate.log").read_text())
    assert '"GET /accounts/login/' in (logs / "access.log").read_text()
    assert {p.name: p.stat().st_mode & 0o777 for p in logs.iterdir()} == dict.fromkeys(
        ("simulate.log", "access.log", "console.log"), 0o600
    )


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=2) as response:  # noqa: S310
            return response.status == 200
    except OSError:
        return False


def _sign_in(base: str) -> None:
    """Django's login form, as a browser submits it: cookie jar and CSRF token."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(f"{base}/accounts/login/", timeout=10) as response:
        form = response.read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert token, form[:2000]
    body = urllib.parse.urlencode(
        {
            "csrfmiddlewaretoken": token.group(1),
            "username": "operator",
            "password": PASSWORD,
            "next": "/",
        }
    ).encode()
    request = urllib.request.Request(f"{base}/accounts/login/", data=body)  # noqa: S310
    with opener.open(request, timeout=10) as response:
        page = response.read().decode()
        assert urllib.parse.urlparse(response.url).path == "/"
    assert "operator" in page
    _assert_static_files_are_compressed(base, page)


def _assert_static_files_are_compressed(base: str, page: str) -> None:
    """The page's stylesheet and script come brotli-compressed (gzip for a client
    without br), as collectstatic wrote them. (Under DEBUG, as here, Django links the
    unhashed names; collectstatic compressed those copies too.)"""
    paths = re.findall(r'(?:href|src)="(/static/[^"]+\.(?:css|js))"', page)
    assert len(paths) >= 2, page[:2000]  # console.css and console.js
    for path in paths:
        for accept, encoding in (("br, gzip", "br"), ("gzip", "gzip")):
            request = urllib.request.Request(  # noqa: S310
                f"{base}{path}", headers={"Accept-Encoding": accept}
            )
            with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
                assert response.headers["Content-Encoding"] == encoding, (path, accept)

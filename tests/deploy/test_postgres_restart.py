"""PostgreSQL restarted under load (issue 30): while it is down the console's pages
answer 503 with the console's own page, never a 500, a traceback or the proxy's error
page; once it is back they answer 200 again, from the same console processes.

Two clients load four signed-in pages through nginx; the restart is ``pg_ctl restart
-m fast``. How long pages were unavailable (first to last failed request) is measured
and printed at the end of the run ("deploy: measured").
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from tests.deploy.topology import Topology

PAGES = ["/", "/dashboard", "/events", "/errors"]
RECOVERED = 20  # consecutive 200s after the restart that count as recovered


@dataclass(frozen=True)
class Answer:
    at: float
    path: str
    status: int
    body: str


def test_pages_answer_503_while_postgresql_restarts_and_recover_alone(
    topology: Topology, new_page, sign_in, measured
):
    page = new_page()
    sign_in(page)
    cookie = "; ".join(f"{c['name']}={c['value']}" for c in page.context.cookies())
    pids = {name: host.proc.pid for name, host in topology.hosts.items()}
    answers: list[Answer] = []
    restarted = threading.Event()
    stop = threading.Event()

    def load(offset: int) -> None:
        n = offset
        while not stop.is_set():
            path = PAGES[n % len(PAGES)]
            n += 1
            try:
                status, body = topology.request(path, cookie=cookie, timeout=30)
            except OSError as exc:
                status, body = 0, repr(exc)
            answers.append(Answer(time.monotonic(), path, status, body))
            if restarted.is_set() and _recovered(answers):
                stop.set()

    clients = [threading.Thread(target=load, args=(i,)) for i in range(2)]
    for client in clients:
        client.start()
    time.sleep(1)
    began = time.monotonic()
    topology.pg_ctl("restart", "-m", "fast")
    restart_took = time.monotonic() - began
    restarted.set()
    for client in clients:
        client.join(60)
    stop.set()

    assert _recovered(answers), [(a.path, a.status) for a in answers[-RECOVERED:]]
    failed = [a for a in answers if a.status != 200]
    assert failed, "no request met the restart: the test proves nothing"
    for a in failed:
        assert a.status == 503, (a.path, a.status, a.body[:500])
        assert "Database unavailable" in a.body or "unavailable" in a.body.lower(), a.body[:500]
        assert "Traceback" not in a.body
        assert '<link rel="stylesheet"' in a.body  # the console's own page, not nginx's
    assert {name: host.proc.pid for name, host in topology.hosts.items()} == pids
    unavailable = failed[-1].at - failed[0].at
    measured["PostgreSQL restart"] = (
        f"pg_ctl restart -m fast took {restart_took:.2f} s; pages answered 503 for "
        f"{unavailable:.2f} s ({len(failed)} of {len(answers)} requests, first to last "
        f"failed), then 200 without restarting the console"
    )


def _recovered(answers: list[Answer]) -> bool:
    tail = answers[-RECOVERED:]
    return len(tail) == RECOVERED and all(a.status == 200 for a in tail)

"""Sign-in throttling behind nginx (issue 30), end to end: clients connect from
different loopback addresses (127.0.0.2, .3, .4: Linux routes all of 127/8 to
loopback), nginx appends each one's address to X-Forwarded-For, and the console counts
failures per (username, that address). A lockout of one address leaves the operator
signing in from another, and a client's forged X-Forwarded-For does not move its count.
"""

from __future__ import annotations

import http.client
import re
from http.cookies import SimpleCookie

from tests.deploy.topology import OPERATOR, Topology

LIMIT = 5  # AXES_FAILURE_LIMIT


def _sign_in(topology: Topology, source: str, password: str, forged: str = "") -> int:
    """One sign-in through nginx from ``source``: the form, then its POST; the status."""
    conn = http.client.HTTPSConnection(
        "127.0.0.1", topology.port, timeout=30, context=topology.tls(), source_address=(source, 0)
    )
    try:
        conn.request("GET", "/accounts/login/")
        form = conn.getresponse()
        page = form.read().decode()
        cookie = SimpleCookie()
        for header in form.headers.get_all("Set-Cookie") or []:
            cookie.load(header)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        body = f"csrfmiddlewaretoken={token}&username={OPERATOR}&password={password}"
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": f"csrftoken={cookie['csrftoken'].value}",
            "Origin": topology.url(""),
            "Referer": topology.url("/accounts/login/"),
        }
        if forged:
            headers["X-Forwarded-For"] = forged
        conn.request("POST", "/accounts/login/", body=body, headers=headers)
        answer = conn.getresponse()
        answer.read()
        return answer.status
    finally:
        conn.close()


def test_a_lockout_at_one_address_leaves_another_and_a_forged_header_moves_nothing(
    topology: Topology,
):
    try:
        statuses = [_sign_in(topology, "127.0.0.2", "wrong") for _ in range(LIMIT)]
        assert statuses == [200] * (LIMIT - 1) + [429]  # the form again, then locked
        assert _sign_in(topology, "127.0.0.2", topology.password) == 429
        # The same operator from another address behind the same proxy signs in.
        assert _sign_in(topology, "127.0.0.3", topology.password) == 302

        # A client naming another address in its own X-Forwarded-For is still counted
        # at its own: nginx appends the real one, and only that is believed.
        statuses = [
            _sign_in(topology, "127.0.0.4", "wrong", forged=f"10.9.9.{n}") for n in range(LIMIT)
        ]
        assert statuses == [200] * (LIMIT - 1) + [429]
        assert _sign_in(topology, "127.0.0.4", topology.password, forged="10.9.9.99") == 429
        assert _sign_in(topology, "127.0.0.3", topology.password, forged="127.0.0.4") == 302
    finally:
        topology.manage("axes_reset")

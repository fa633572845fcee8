"""Pages are gzip-compressed with Django's BREACH mitigation; polls' 204s, artifact
downloads and static files are left as they were (issue 30)."""

import gzip
import re

import pytest
from django.conf import settings

from storage import ExecutionState
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB

CHROMIUM = {"HTTP_ACCEPT_ENCODING": "gzip, deflate, br, zstd"}
FNAME = 0x08  # gzip header flag: a file name follows (where Django puts random bytes)


@pytest.fixture
def some_work():
    f.scope("acme")
    f.parked("w1", scope_id="acme")
    f.event("e1", work_id="w1")


def poll_url_of(html: str) -> str:
    return re.search(r'hx-get="([^"]+stamp=[^"]+)"', html).group(1).replace("&amp;", "&")


@pytest.mark.parametrize("path", ["/", "/works/w1", "/events", "/dashboard"])
def test_a_page_is_compressed_for_a_browser_that_accepts_gzip(as_alice, some_work, path):
    plain = as_alice.get(path)
    packed = as_alice.get(path, **CHROMIUM)

    assert packed.status_code == plain.status_code == 200
    assert packed["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in packed["Vary"]
    assert int(packed["Content-Length"]) == len(packed.content) < len(plain.content) / 2
    html = gzip.decompress(packed.content)
    # The same page (but for the CSRF token, masked afresh, and countdowns: same sizes).
    assert html.startswith(b"<!doctype html>")
    assert html.endswith(b"</html>\n")
    assert abs(len(html) - len(plain.content)) < 16
    # Django's "Heal the BREACH": a file name of random length in the gzip header.
    assert packed.content[3] & FNAME


def test_a_page_is_not_compressed_for_a_client_that_does_not_ask(as_alice, some_work):
    response = as_alice.get("/")

    assert "Content-Encoding" not in response
    assert response.content.startswith(b"<!doctype html>")


def test_a_poll_that_changed_nothing_is_still_a_bodiless_204(as_alice, some_work):
    url = poll_url_of(as_alice.get("/").content.decode())

    response = as_alice.get(url, HTTP_HX_REQUEST="true", **CHROMIUM)

    assert response.status_code == 204
    assert response.content == b""
    assert "Content-Encoding" not in response


def test_a_poll_that_brings_a_fragment_is_compressed(as_alice, some_work):
    url = poll_url_of(as_alice.get("/").content.decode())
    f.parked("w2", scope_id="acme")

    response = as_alice.get(url, HTTP_HX_REQUEST="true", **CHROMIUM)

    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert b"w2" in gzip.decompress(response.content)


def test_an_artifact_download_is_streamed_as_stored(as_bob):
    content = b'{"report": "' + b"x" * 4000 + b'"}'
    ref = f.publish(content, "application/json")
    x = f.running("w1")
    f.finish(x.id, state=ExecutionState.COMPLETED, artifacts=[ref])

    response = as_bob.get(f"/executions/{x.id}/artifacts/{ref.id}", **CHROMIUM)

    assert response.streaming
    assert "Content-Encoding" not in response
    assert response["Content-Length"] == str(ref.size)
    assert b"".join(response.streaming_content) == content


def test_a_static_file_is_served_by_whitenoise_untouched(client):
    source = settings.BASE_DIR / "static" / "js" / "console.js"

    response = client.get("/static/js/console.js", **CHROMIUM)

    assert response.status_code == 200
    assert "Content-Encoding" not in response  # no .gz copy without collectstatic
    assert b"".join(response.streaming_content) == source.read_bytes()

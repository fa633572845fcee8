"""Logs and reports inline on the Work page: the last lines of a log, a report's
JSON pretty-printed, escaped, named by what they are, with the digest check; binary
and oversized content stays a download."""

import json
import os
from pathlib import Path

from django.conf import settings

from console.runtime.previews import INLINE_LIMIT, TAIL_BYTES, TAIL_LINES, logical_names
from storage import ArtifactRef, ExecutionState, WorkState
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB

LOG = "".join(f"[{n:04d}] step {n}: ok\n" for n in range(120)) + "FATAL: card declined\n"


def failed_with(*refs: ArtifactRef, work_id: str = "w1") -> str:
    x = f.running(work_id)
    f.finish(
        x.id,
        state=ExecutionState.FAILED,
        work_state=WorkState.READY,
        message="declined",
        artifacts=refs,
    )
    return x.id


def page(client, work_id: str = "w1") -> str:
    response = client.get(f"/works/{work_id}")
    assert response.status_code == 200
    return response.content.decode()


def test_a_failed_attempts_log_shows_its_last_lines_with_show_all(as_bob):
    ref = f.publish(LOG.encode())
    failed_with(ref)
    html = page(as_bob)

    assert "FATAL: card declined" in html
    assert f"last {TAIL_LINES} of 121 lines" in html
    tail = html[html.index('artifact-tail">') :].split("</pre>")[0]
    assert "[0070] step 70" not in tail  # before the last 50
    assert tail.startswith('artifact-tail">[0071] step 71: ok')
    assert "Show all 121 lines" in html
    assert "[0000] step 0: ok" in html  # inside "show all"
    assert f'href="/executions/w1-x1/artifacts/{ref.id}"' in html


def test_artifacts_are_named_by_what_they_are_not_by_their_hash(as_bob):
    refs = [
        f.publish(b"a\n"),
        f.publish(b"{}", "application/json"),
        f.publish(b"b\n"),
        f.publish(b"\x89PNG", "image/png"),
    ]
    assert logical_names(refs) == ["log", "report", "log 2", "png"]
    failed_with(*refs)
    html = page(as_bob)

    assert "attempt 1 · log 2" in html
    assert "names are derived from the media type" in html


def test_a_report_is_pretty_json_and_hostile_text_is_escaped_and_visible(as_bob):
    hostile = {"html": "<script>alert(1)</script>", "name": "rtl\u202egnp.exe", "n": 1}
    ref = f.publish(json.dumps(hostile).encode(), "application/json")
    log = f.publish("<script>alert(2)</script>\n\u202eevil\n".encode())
    failed_with(ref, log)
    html = page(as_bob)

    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html
    assert "U+202E" in html  # the override shown, not obeyed
    assert "\n  &quot;n&quot;: 1\n" in html  # indented: one key per line
    assert "\u202e" not in html


def test_the_digest_check_says_whether_the_bytes_match_what_was_recorded(as_bob):
    good = f.publish(b"fine\n")
    bad = f.publish(b"original\n")
    failed_with(good, bad)
    data = Path(settings.ARTIFACT_DIR) / "objects" / bad.id[:2] / bad.id / "data"
    os.chmod(data, 0o600)
    data.write_bytes(b"tampered\n")  # same size, other bytes
    html = page(as_bob)

    assert html.count("SHA-256 matches") == 1
    assert "SHA-256 does not match" in html


def test_binary_and_oversized_reports_stay_download_only(as_bob):
    png = f.publish(b"\x89PNG\r\n" + bytes(range(256)), "image/png")
    big = f.publish(b"[" + b"1," * INLINE_LIMIT + b"1]", "application/json")
    failed_with(png, big)
    html = page(as_bob)

    assert "image/png: download only" in html
    assert "larger than 256 KiB: download it" in html
    assert "\x89PNG" not in html


def test_a_large_log_shows_only_its_tail_read_without_the_whole_file(as_bob):
    body = b"".join(b"line %06d\n" % n for n in range(60_000))  # 660 KB
    ref = f.publish(body + b"the very end\n")
    failed_with(ref)
    html = page(as_bob)

    assert "the very end" in html
    assert "line 000000" not in html
    assert f"only the last {TAIL_BYTES // 1024} KiB were read" in html
    assert "SHA-256 not checked" in html


def test_missing_content_is_said_in_place(as_bob):
    from storage.default import default_artifacts

    ref = f.publish(b"gone\n")
    failed_with(ref)
    default_artifacts().delete(ref)
    html = page(as_bob)

    assert "content unreadable" in html
    assert ">missing</span>" in html


def test_only_the_newest_attempts_are_read(as_bob):
    f.work("w1")
    for n in range(5):
        ref = f.publish(f"attempt {n + 1} log\n".encode())
        x = f.start("w1")
        f.finish(x.id, state=ExecutionState.FAILED, message="again", artifacts=[ref])
    html = page(as_bob)

    assert "attempt 5 log" in html
    assert "attempt 3 log" in html
    assert "attempt 2 log" not in html  # older: a download link only


def test_content_whose_digest_does_not_match_is_not_shown_nor_offered(as_bob):
    """Issue 34: only content whose SHA-256 matches is shown; else the page says it
    does not and offers nothing (no preview, no download)."""
    bad = f.publish(b"original\n")
    failed_with(bad)
    data = Path(settings.ARTIFACT_DIR) / "objects" / bad.id[:2] / bad.id / "data"
    os.chmod(data, 0o600)
    data.write_bytes(b"tampered\n")
    html = page(as_bob)

    assert "SHA-256 does not match" in html
    assert "so it is not shown" in html
    assert "tampered" not in html
    assert f"/artifacts/{bad.id}" not in html

"""Artifact download: streamed with the reference's type and size, always as an
attachment; missing content is a clear 404 and the Work page still renders."""

import os
from dataclasses import replace

import pytest

from storage import ExecutionState
from storage.default import default_artifacts
from tests.console import factories as f
from tests.console.conftest import DB

pytestmark = DB


@pytest.fixture
def attached():
    ref = f.publish(b'{"ok": true, "html": "<b>not rendered</b>"}', "application/json")
    x = f.running("w1")
    f.finish(x.id, state=ExecutionState.COMPLETED, artifacts=[ref])
    return x, ref


def test_it_streams_an_attached_artifact_as_a_download(as_bob, attached):
    x, ref = attached

    response = as_bob.get(f"/executions/{x.id}/artifacts/{ref.id}")

    assert response.status_code == 200
    assert response.streaming
    assert b"".join(response.streaming_content) == b'{"ok": true, "html": "<b>not rendered</b>"}'
    assert response["Content-Type"] == "application/json"
    assert response["Content-Length"] == str(ref.size)
    # Named by what it is, not by its hash.
    assert response["Content-Disposition"] == 'attachment; filename="w1-attempt-1-report.json"'
    assert response["X-Content-Type-Options"] == "nosniff"


def test_it_only_serves_artifacts_attached_to_that_execution(as_bob, attached):
    _, ref = attached
    other = f.running("w2")

    response = as_bob.get(f"/executions/{other.id}/artifacts/{ref.id}")

    assert response.status_code == 404
    assert b"has no artifact" in response.content


def test_missing_content_is_a_clear_404_and_the_work_page_still_renders(as_bob, attached):
    x, ref = attached
    default_artifacts().delete(ref)

    download = as_bob.get(f"/executions/{x.id}/artifacts/{ref.id}")
    page = as_bob.get("/works/w1")

    assert download.status_code == 404
    assert b"Artifact content missing" in download.content
    assert b"The Execution and its Work are unaffected." in download.content
    assert page.status_code == 200
    assert b">missing</span>" in page.content


def test_the_work_page_links_each_artifact(as_bob, attached):
    x, ref = attached

    html = as_bob.get("/works/w1").content.decode()

    assert f'href="/executions/{x.id}/artifacts/{ref.id}"' in html
    assert "application/json" in html


def test_content_that_does_not_match_its_reference_is_not_served(as_bob):
    ref = f.publish(b"12345", "text/plain")
    x = f.running("w1")
    f.finish(x.id, artifacts=[replace(ref, size=99)])

    response = as_bob.get(f"/executions/{x.id}/artifacts/{ref.id}")

    assert response.status_code == 404
    assert b"differs from the reference" in response.content


def test_a_symlink_planted_in_the_artifact_folder_is_not_followed(as_bob, attached, tmp_path):
    x, ref = attached
    secret = tmp_path / "secret_key"
    secret.write_bytes(b"s" * ref.size)  # same size, so only the link check stops it
    data = default_artifacts().root / "objects" / ref.id[:2] / ref.id / "data"
    data.unlink()
    data.symlink_to(secret)

    response = as_bob.get(f"/executions/{x.id}/artifacts/{ref.id}")

    assert response.status_code == 404
    assert b"not a regular file" in response.content
    assert b"sss" not in response.content


def test_a_hard_link_in_the_artifact_folder_is_not_served(as_bob, attached, tmp_path):
    """Issue 34: a hard link (same file system) planted in place of the data served
    whatever it names; st_nlink > 1 is refused as a symbolic link is."""
    x, ref = attached
    data = default_artifacts().root / "objects" / ref.id[:2] / ref.id / "data"
    secret = data.parent.parent / "secret_key"  # beside the store, on its file system
    secret.write_bytes(b"s" * ref.size)
    data.unlink()
    os.link(secret, data)

    response = as_bob.get(f"/executions/{x.id}/artifacts/{ref.id}")

    assert response.status_code == 404
    assert b"hard links" in response.content
    assert b"sss" not in response.content
    page = as_bob.get(f"/works/{x.work_id}").content.decode()
    assert "sss" not in page
    assert "hard links" in page


def test_a_second_name_for_the_real_data_is_refused_too(as_bob, attached):
    """Even a link to the artifact's own bytes: the count alone decides, as in the
    routed workspace."""
    x, ref = attached
    data = default_artifacts().root / "objects" / ref.id[:2] / ref.id / "data"
    os.link(data, data.parent.parent / "spare")

    assert as_bob.get(f"/executions/{x.id}/artifacts/{ref.id}").status_code == 404

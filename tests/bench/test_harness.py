"""The benchmark harness end to end at toy sizes: every benchmark runs in its child
processes (generate, gunicorn and simulate included) and the report has every section.
Figures are not checked: benchmarks, not timed tests."""

from pathlib import Path

import pytest

from bench.run import main

SECTIONS = (
    "## Machine",
    "## Targets",
    "## 1. Transaction throughput",
    "## 2. Cost follows the selection, not the history",
    "## 3. The Work list against Django admin",
    "## 4. Views never wait for writers",
    "## 5. Under load",
    "## 6. Routed runs: admission and control",
    "## 7. Triage: exhausted Work, error groups, bulk retry",
    "## 8. Routed runs: journal appends and artifact accepts",
    "## 9. Routed runs: the Workflows list and the workflow page",
    "## 10. Polls on the wire, compressed and not",
    "## 11. The store's past: pages as of a moment",
    "## 12. Polls while the runtime commits",
)


# The harness makes its own SQLite folders whatever engine the suite runs on, so the
# PostgreSQL pass of `make test` would only repeat it: it runs once, with the SQLite pass.
@pytest.mark.slow
@pytest.mark.multiprocess
@pytest.mark.sqlite_only
def test_the_harness_runs_every_benchmark_and_reports_each(tmp_path: Path) -> None:
    out = tmp_path / "report.md"

    assert main(["--toy", "--no-pg", "--out", str(out)]) == 0

    text = out.read_text()
    for heading in SECTIONS:
        assert heading in text
    assert "did not complete" not in text
    assert "PostgreSQL: not run" in text
    assert "| 5. Errors under load | 0 | 0 | met |" in text


@pytest.mark.multiprocess
@pytest.mark.sqlite_only
def test_a_kept_history_is_reused_only_when_built_with_the_same_sizes(tmp_path: Path) -> None:
    from bench import history
    from bench.proc import Workspace, manage

    kept = Workspace(root=tmp_path, keep=True)
    data = kept.fresh("history-x")
    manage(data, "migrate", "--noinput", "-v", "0")
    built = {"seed": 200, "works": 300, "proportional": True}

    assert history.reused(kept, "history-x", built) is None  # no marker: built by nobody

    history._mark(data, built)
    again = history.reused(kept, "history-x", built)
    assert again is not None
    assert again.db == data.db
    assert kept.reused == ["history-x"]  # the report names what it did not build
    assert history.reused(kept, "history-x", {**built, "works": 600}) is None
    assert history.reused(kept, "history-y", built) is None

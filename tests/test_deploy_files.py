"""The deployment's files agree with the code (issue 30): docs/deploy.md names every
variable the settings read, the example environment sets only variables that exist,
and each way of starting a console host (the systemd unit, the Procfile) runs the
gunicorn settings the deploy suite starts its hosts with."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SETTINGS = (REPO / "conduit" / "settings.py").read_text()
READ = set(re.findall(r'env_[a-z_]+\(\s*"([A-Z_]+)"', SETTINGS)) | set(
    re.findall(r'os\.environ\.get\("([A-Z_]+)"', SETTINGS)
)
# Read by the test machinery or make run, never set in a deployment's environment.
INTERNAL = {"CONDUIT_TEST_DATABASE", "CONDUIT_TEST_SQLITE_PATH"}


def test_docs_deploy_names_every_variable_the_settings_read():
    docs = (REPO / "docs" / "deploy.md").read_text()
    assert len(READ) > 20
    assert sorted(v for v in READ - INTERNAL if f"`{v}`" not in docs) == []


def test_the_example_environment_sets_only_variables_that_exist():
    example = (REPO / "deploy" / "systemd" / "conduit.env.example").read_text()
    names = re.findall(r"^([A-Z_]+)=", example, re.MULTILINE)
    assert "CONDUIT_SECRET_KEY" in names
    assert sorted(set(names) - READ - {"DATABASE_URL"}) == []


def test_every_console_host_command_uses_the_deploy_gunicorn_settings():
    unit = (REPO / "deploy" / "systemd" / "conduit-console.service").read_text()
    procfile = (REPO / "deploy" / "Procfile").read_text()
    starts = re.findall(r"^ExecStart=(.*)$", unit, re.MULTILINE)
    starts += re.findall(r"^console: (.*)$", procfile, re.MULTILINE)
    assert len(starts) == 2
    for command in starts:
        assert "gunicorn -c deploy/gunicorn.conf.py" in command
        assert command.endswith("conduit.wsgi")
    topology = (REPO / "tests" / "deploy" / "topology.py").read_text()
    assert '"deploy" / "gunicorn.conf.py"' in topology

"""The data folder is 0700 and the SQLite files 0600 whatever the umask; looser modes
found at start are tightened with a warning (issue 20)."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parent.parent

# Opens the database in a fresh process and writes once, so SQLite creates -wal and
# -shm, then prints the modes while the connection still holds them.
WRITE_AND_LIST_MODES = """
import os, stat, django
django.setup()
from django.conf import settings
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("CREATE TABLE IF NOT EXISTS probe (x INTEGER)")
    cursor.execute("INSERT INTO probe VALUES (1)")
    name = str(settings.SQLITE_PATH)
    for path in (str(settings.DATA_DIR), name, name + "-wal", name + "-shm"):
        print(path, oct(stat.S_IMODE(os.stat(path).st_mode)))
"""


def start(data_dir: Path, umask: int) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CONDUIT_", "CONSOLE_")) and k != "DATABASE_URL"
    }
    env |= {"CONDUIT_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "conduit.settings"}
    return subprocess.run(
        [sys.executable, "-c", WRITE_AND_LIST_MODES],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=lambda: os.umask(umask),
    )


def modes(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    assert result.returncode == 0, result.stderr
    return dict(line.rsplit(" ", 1) for line in result.stdout.splitlines())


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o277])
def test_a_new_data_folder_and_database_are_private_whatever_the_umask(tmp_path, umask):
    data = tmp_path / "data"

    found = modes(start(data, umask))

    db = data / "conduit.sqlite3"
    assert found == {
        str(data): "0o700",
        str(db): "0o600",
        f"{db}-wal": "0o600",
        f"{db}-shm": "0o600",
    }


def test_looser_modes_found_at_start_are_tightened_with_a_warning(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    os.chmod(data, 0o755)  # noqa: S103  (the loose mode an older version left)
    db = data / "conduit.sqlite3"
    for name in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        name.touch()
        os.chmod(name, 0o644)

    result = start(data, 0o022)

    assert result.returncode == 0, result.stderr
    assert f"{data} had mode 0755; set it to 0700" in result.stderr
    for name in (db, f"{db}-wal", f"{db}-shm"):
        assert f"{name} had mode 0644; set it to 0600" in result.stderr
    # SQLite removes -wal and -shm when the last connection closes; the database stays.
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert modes(result)[f"{db}-wal"] == "0o600"

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import InternalError, OperationalError, connections, transaction

from conduit.env import env_bool, env_int, env_list, env_path
from storage.files import read_or_create_secret

BASE_DIR = Path(__file__).resolve().parent.parent
# Long and varied enough for Django's weak-key test (check --deploy W009).
STRONG_KEY = "o1Xc9-Tq4vB2mZ7yL0pK3sR8wD5nF6hJ_aG1eC4uV9iQ2tY7bN3"

# ---------------------------------------------------------------- SQLite connections

both_aliases = pytest.mark.django_db(transaction=True, databases=["default", "view"])
sqlite_only = pytest.mark.sqlite_only
postgres_only = pytest.mark.postgres_only


def pragma(alias: str, name: str) -> object:
    with connections[alias].cursor() as cursor:
        cursor.execute(f"PRAGMA {name}")
        return cursor.fetchone()[0]


@sqlite_only
@both_aliases
@pytest.mark.parametrize("alias", ["default", "view"])
def test_every_connection_has_wal_full_sync_and_busy_timeout(alias):
    connections[alias].close()  # prove it for a connection opened now, not a leftover

    assert pragma(alias, "journal_mode") == "wal"
    assert pragma(alias, "synchronous") == 2  # FULL
    assert pragma(alias, "busy_timeout") >= 30_000
    assert pragma(alias, "foreign_keys") == 1


@sqlite_only
@both_aliases
@pytest.mark.parametrize("alias", ["default", "view"])
def test_every_connection_caps_its_page_cache_at_4_mib(alias):
    # A worker opens two aliases x four threads of these: 32 MiB of pages at most.
    connections[alias].close()

    assert pragma(alias, "cache_size") == -4096  # negative: KiB, not pages


@sqlite_only
@both_aliases
def test_both_aliases_open_the_same_file_and_only_view_is_query_only():
    assert connections["default"].settings_dict["NAME"] == connections["view"].settings_dict["NAME"]
    assert pragma("default", "query_only") == 0
    assert pragma("view", "query_only") == 1


@sqlite_only
@both_aliases
def test_default_begins_immediate_and_view_begins_deferred():
    connections["default"].ensure_connection()
    connections["view"].ensure_connection()

    assert connections["default"].transaction_mode == "IMMEDIATE"
    assert connections["view"].transaction_mode is None


@sqlite_only
@both_aliases
def test_it_refuses_writes_through_the_view_alias():
    with pytest.raises(OperationalError, match="readonly"), connections["view"].cursor() as c:
        c.execute("CREATE TABLE must_not_exist (x INTEGER)")


@sqlite_only
@both_aliases
def test_a_view_snapshot_does_not_block_a_writer():
    with connections["default"].cursor() as c:
        c.execute("CREATE TABLE snap (x INTEGER)")
        c.execute("INSERT INTO snap VALUES (1)")

    with transaction.atomic(using="view"), connections["view"].cursor() as reader:
        reader.execute("SELECT count(*) FROM snap")
        assert reader.fetchone()[0] == 1
        # The reader's deferred transaction holds a WAL snapshot, not a lock: the writer
        # commits at once (a lock would make it wait the 30 s busy timeout, then fail).
        with transaction.atomic(using="default"), connections["default"].cursor() as c:
            c.execute("INSERT INTO snap VALUES (2)")
        reader.execute("SELECT count(*) FROM snap")
        assert reader.fetchone()[0] == 1

    with connections["view"].cursor() as reader:
        reader.execute("SELECT count(*) FROM snap")
        assert reader.fetchone()[0] == 2


@sqlite_only
def test_tests_use_a_test_database_file_in_the_data_dir():
    test_path = settings.DATABASES["default"]["TEST"]["NAME"]

    assert test_path == settings.TEST_SQLITE_PATH
    assert test_path.parent == settings.DATA_DIR
    assert test_path.name.startswith("test_conduit")
    assert settings.DATABASES["view"]["TEST"]["MIRROR"] == "default"


def test_test_settings_are_fast_and_need_no_collectstatic():
    assert settings.TESTING
    assert settings.PASSWORD_HASHERS == ["django.contrib.auth.hashers.MD5PasswordHasher"]
    assert settings.STORAGES["staticfiles"]["BACKEND"] == (
        "django.contrib.staticfiles.storage.StaticFilesStorage"
    )


# ---------------------------------------------------------------- environment readers


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("1", True), ("true", True), ("Yes", True), ("ON", True), ("0", False), ("off", False)],
)
def test_env_bool_reads_the_usual_spellings(monkeypatch, raw, expected):
    monkeypatch.setenv("CONDUIT_X", raw)
    assert env_bool("CONDUIT_X", not expected) is expected


def test_env_bool_returns_the_default_when_unset(monkeypatch):
    monkeypatch.delenv("CONDUIT_X", raising=False)
    assert env_bool("CONDUIT_X", True) is True


@pytest.mark.parametrize("raw", ["", "maybe", "2", "truthy"])
def test_env_bool_names_the_variable_and_the_bad_value(monkeypatch, raw):
    monkeypatch.setenv("CONDUIT_X", raw)
    with pytest.raises(ImproperlyConfigured, match=f"CONDUIT_X.*{raw!r}"):
        env_bool("CONDUIT_X", False)


def test_env_int(monkeypatch):
    monkeypatch.setenv("CONDUIT_N", " 42 ")
    assert env_int("CONDUIT_N", 0) == 42
    monkeypatch.setenv("CONDUIT_N", "4.2")
    with pytest.raises(ImproperlyConfigured, match=r"CONDUIT_N.*'4\.2'"):
        env_int("CONDUIT_N", 0)


def test_env_path_takes_relative_paths_from_the_base(monkeypatch, tmp_path):
    monkeypatch.setenv("CONDUIT_P", "sub/dir")
    assert env_path("CONDUIT_P", Path("/unused"), base=tmp_path) == tmp_path / "sub" / "dir"
    monkeypatch.setenv("CONDUIT_P", " ")
    with pytest.raises(ImproperlyConfigured, match="CONDUIT_P"):
        env_path("CONDUIT_P", Path("/unused"), base=tmp_path)


def test_env_list(monkeypatch):
    monkeypatch.setenv("CONDUIT_L", "a.example, b.example,")
    assert env_list("CONDUIT_L", []) == ["a.example", "b.example"]
    monkeypatch.setenv("CONDUIT_L", " , ")
    with pytest.raises(ImproperlyConfigured, match="CONDUIT_L"):
        env_list("CONDUIT_L", [])


def test_secret_is_created_once_with_mode_0600(tmp_path):
    path = tmp_path / "nested" / "secret"
    first = read_or_create_secret(path)

    assert len(first) >= 40
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_or_create_secret(path) == first
    assert list(path.parent.iterdir()) == [path]  # no temporary file left behind


# ---------------------------------------------------------------- settings in a fresh process


def load_settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Import conduit.settings in a new interpreter with only the given CONDUIT_* vars."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CONDUIT_", "CONSOLE_")) and k != "DATABASE_URL"
    }
    clean |= {"CONDUIT_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "conduit.settings"}
    clean |= env
    code = (
        "import json; from django.conf import settings as s; print(json.dumps({k: getattr(s, k)"
        " for k in ['DEBUG', 'SECRET_KEY', 'SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE',"
        " 'SECURE_SSL_REDIRECT', 'SECURE_HSTS_SECONDS', 'X_FRAME_OPTIONS',"
        " 'SECURE_CONTENT_TYPE_NOSNIFF', 'SECURE_REFERRER_POLICY', 'ALLOWED_HOSTS',"
        " 'CONSOLE_READ_ONLY', 'TESTING']}))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=BASE_DIR,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def loaded(result: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert result.returncode == 0, result.stderr
    values: dict[str, object] = json.loads(result.stdout)
    return values


def test_development_defaults(tmp_path):
    values = loaded(load_settings(tmp_path))

    assert values["DEBUG"] is True
    assert values["TESTING"] is False
    assert values["SESSION_COOKIE_SECURE"] is False
    assert values["ALLOWED_HOSTS"] == ["localhost", "127.0.0.1"]
    assert values["CONSOLE_READ_ONLY"] is False


def test_development_secret_key_is_generated_once_and_reused(tmp_path):
    first = loaded(load_settings(tmp_path))["SECRET_KEY"]
    second = loaded(load_settings(tmp_path))["SECRET_KEY"]

    assert first == second == (tmp_path / "secret_key").read_text().strip()
    assert stat.S_IMODE((tmp_path / "secret_key").stat().st_mode) == 0o600


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    result = load_settings(tmp_path, CONDUIT_PRODUCTION="true")

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "CONDUIT_SECRET_KEY" in result.stderr
    assert not (tmp_path / "secret_key").exists()


@pytest.mark.parametrize(
    "key",
    ["short", "k" * 50, "abcd" * 20, "django-insecure-" + STRONG_KEY],
    ids=["short", "one-character", "four-characters", "django-insecure"],
)
def test_production_refuses_to_start_with_a_weak_secret_key(tmp_path, key):
    result = load_settings(tmp_path, CONDUIT_PRODUCTION="true", CONDUIT_SECRET_KEY=key)

    assert result.returncode != 0
    assert "ImproperlyConfigured: CONDUIT_SECRET_KEY is weak" in result.stderr
    assert key not in result.stderr  # the key itself is never echoed


def test_production_is_locked_down(tmp_path):
    values = loaded(
        load_settings(tmp_path, CONDUIT_PRODUCTION="true", CONDUIT_SECRET_KEY=STRONG_KEY)
    )

    assert values["DEBUG"] is False
    assert values["SECRET_KEY"] == STRONG_KEY
    assert values["SESSION_COOKIE_SECURE"] is True
    assert values["CSRF_COOKIE_SECURE"] is True
    assert values["SECURE_SSL_REDIRECT"] is True
    assert values["SECURE_HSTS_SECONDS"] == 31_536_000
    assert values["X_FRAME_OPTIONS"] == "DENY"
    assert values["SECURE_CONTENT_TYPE_NOSNIFF"] is True
    assert values["SECURE_REFERRER_POLICY"] == "same-origin"


def test_production_ssl_redirect_can_be_switched_off(tmp_path):
    values = loaded(
        load_settings(
            tmp_path,
            CONDUIT_PRODUCTION="1",
            CONDUIT_SECRET_KEY=STRONG_KEY,
            CONDUIT_SSL_REDIRECT="false",
        )
    )
    assert values["SECURE_SSL_REDIRECT"] is False


def test_production_refuses_debug(tmp_path):
    result = load_settings(
        tmp_path, CONDUIT_PRODUCTION="1", CONDUIT_SECRET_KEY=STRONG_KEY, CONDUIT_DEBUG="1"
    )
    assert result.returncode != 0
    assert "CONDUIT_DEBUG" in result.stderr


def test_a_malformed_variable_stops_startup_naming_it(tmp_path):
    result = load_settings(tmp_path, CONSOLE_READ_ONLY="sometimes")

    assert result.returncode != 0
    assert "CONSOLE_READ_ONLY" in result.stderr
    assert "'sometimes'" in result.stderr


def test_allowed_hosts_come_from_a_comma_list(tmp_path):
    values = loaded(load_settings(tmp_path, CONDUIT_ALLOWED_HOSTS="console.example,10.0.0.5"))
    assert values["ALLOWED_HOSTS"] == ["console.example", "10.0.0.5"]


def database_settings(tmp_path: Path, url: str, **env: str) -> dict[str, object]:
    """DATABASES["default"] as a fresh process reads it with DATABASE_URL=url."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CONDUIT_", "CONSOLE_")) and k != "DATABASE_URL"
    }
    clean |= {"CONDUIT_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "conduit.settings"}
    clean |= {"DATABASE_URL": url, **env}
    code = (
        "import json; from django.conf import settings as s; d = s.DATABASES;"
        " print(json.dumps({a: {k: d[a][k] for k in ['ENGINE', 'NAME', 'USER', 'PASSWORD',"
        " 'HOST', 'PORT', 'OPTIONS', 'CONN_MAX_AGE', 'TEST']} for a in d}, default=str))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=BASE_DIR,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    values: dict[str, object] = json.loads(result.stdout)
    return values


def test_database_url_selects_postgresql_for_both_aliases(tmp_path):
    from psycopg import IsolationLevel  # the dev extra installs it

    dbs = database_settings(tmp_path, "postgres://conduit:s%40cret@db.example:6543/conduit")

    for alias in ("default", "view"):
        db = dbs[alias]
        assert db["ENGINE"] == "django.db.backends.postgresql"
        assert (db["NAME"], db["USER"], db["PASSWORD"]) == ("conduit", "conduit", "s@cret")
        assert (db["HOST"], db["PORT"]) == ("db.example", "6543")
    default, view = dbs["default"]["OPTIONS"], dbs["view"]["OPTIONS"]
    assert default["isolation_level"] == IsolationLevel.SERIALIZABLE
    assert "synchronous_commit=on" in default["options"]
    assert "lock_timeout=30s" in default["options"]
    assert view["isolation_level"] == IsolationLevel.REPEATABLE_READ
    assert "default_transaction_read_only=on" in view["options"]
    assert "jit=off" in view["options"]  # short reads: JIT costs more than it saves
    assert dbs["view"]["TEST"] == {"MIRROR": "default"}
    assert default["pool"]["max_size"] == 8
    assert dbs["default"]["CONN_MAX_AGE"] == 0  # the pool keeps connections


def test_database_url_takes_a_unix_socket_and_libpq_parameters(tmp_path):
    dbs = database_settings(
        tmp_path, "postgresql:///conduit?host=/run/postgresql&sslmode=disable&port=5433"
    )

    db = dbs["default"]
    assert (db["NAME"], db["HOST"], db["PORT"], db["USER"]) == (
        "conduit",
        "/run/postgresql",
        "5433",
        "",
    )
    assert db["OPTIONS"]["sslmode"] == "disable"


def test_pooling_can_be_turned_off_for_persistent_connections(tmp_path):
    dbs = database_settings(tmp_path, "postgres://u@db/conduit", CONDUIT_DB_POOL_SIZE="0")

    assert "pool" not in dbs["default"]["OPTIONS"]
    assert dbs["default"]["CONN_MAX_AGE"] == 60


def test_tests_never_use_the_configured_postgresql_database(tmp_path):
    dbs = database_settings(
        tmp_path, "postgres://u@db/conduit", CONDUIT_TESTING="1", CONDUIT_TEST_DATABASE="test_x"
    )

    assert dbs["default"]["NAME"] == dbs["view"]["NAME"] == "test_x"
    assert dbs["default"]["TEST"] == {"NAME": "test_x"}


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sqlite:///data/conduit.sqlite3", "must be a postgres:// or postgresql:// URL"),
        ("postgres://db.example", "must name one database"),
        ("postgres://db.example:port/conduit", "malformed port"),
        ("postgres://db.example/conduit?pool=1", "unsupported parameter 'pool'"),
    ],
)
def test_a_malformed_database_url_stops_startup_without_echoing_it(tmp_path, url, message):
    result = load_settings(tmp_path, DATABASE_URL=url.replace("//", "//u:hunter2@", 1))

    assert result.returncode != 0
    assert "DATABASE_URL" in result.stderr
    assert message in result.stderr
    assert "hunter2" not in result.stderr


# ---------------------------------------------------------------- PostgreSQL connections


def setting(alias: str, name: str) -> str:
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT current_setting(%s)", [name])
        value: str = cursor.fetchone()[0]
        return value


@postgres_only
@both_aliases
def test_writes_begin_serializable_and_views_repeatable_read_read_only():
    with transaction.atomic(using="default"):
        assert setting("default", "transaction_isolation") == "serializable"
        assert setting("default", "transaction_read_only") == "off"
        assert setting("default", "synchronous_commit") == "on"
        assert setting("default", "lock_timeout") == "30s"
    with transaction.atomic(using="view"):
        assert setting("view", "transaction_isolation") == "repeatable read"
        assert setting("view", "transaction_read_only") == "on"


@postgres_only
@both_aliases
def test_the_server_refuses_writes_through_the_view_alias():
    with (
        pytest.raises(InternalError, match="read-only transaction"),
        connections["view"].cursor() as c,
    ):
        c.execute("CREATE TABLE must_not_exist (x INTEGER)")


@postgres_only
@both_aliases
def test_a_postgresql_view_snapshot_does_not_block_a_writer():
    with connections["default"].cursor() as c:
        c.execute("CREATE TABLE snap (x INTEGER)")
        c.execute("INSERT INTO snap VALUES (1)")

    with transaction.atomic(using="view"), connections["view"].cursor() as reader:
        reader.execute("SELECT count(*) FROM snap")
        assert reader.fetchone()[0] == 1
        with transaction.atomic(using="default"), connections["default"].cursor() as c:
            c.execute("INSERT INTO snap VALUES (2)")
        reader.execute("SELECT count(*) FROM snap")
        assert reader.fetchone()[0] == 1  # REPEATABLE READ: the View's snapshot

    with connections["view"].cursor() as reader:
        reader.execute("SELECT count(*) FROM snap")
        assert reader.fetchone()[0] == 2


@postgres_only
def test_tests_use_a_test_database_of_their_own():
    name = settings.DATABASES["default"]["TEST"]["NAME"]

    assert name == settings.TEST_DATABASE == os.environ["CONDUIT_TEST_DATABASE"]
    assert name.startswith("test_")
    assert settings.DATABASES["view"]["TEST"]["MIRROR"] == "default"
    assert settings.DATABASES["view"]["NAME"] == settings.DATABASES["default"]["NAME"] == name


# ---------------------------------------------------------------- a restore's fencing child


def test_the_storage_database_override_names_a_sqlite_file_over_everything(tmp_path):
    restored = tmp_path / "restored" / "conduit.sqlite3.restoring"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONDUIT_", "STORAGE_"))}
    env |= {
        "CONDUIT_DATA_DIR": str(tmp_path),
        "DJANGO_SETTINGS_MODULE": "conduit.settings",
        "DATABASE_URL": "postgres://conduit@db.example/conduit",
        "CONDUIT_TESTING": "1",  # not even the test database file wins over it
        "STORAGE_DATABASE_OVERRIDE": f"sqlite://{restored}",
    }
    code = (
        "import json; from django.conf import settings as s; d = s.DATABASES;"
        " print(json.dumps({a: [d[a]['ENGINE'], str(d[a]['NAME'])] for a in d}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    engine = "django.db.backends.sqlite3"
    assert json.loads(result.stdout) == {
        "default": [engine, str(restored)],
        "view": [engine, str(restored)],
    }


def test_the_storage_database_override_names_a_postgresql_database_without_a_pool(tmp_path):
    dbs = database_settings(
        tmp_path,
        "postgres://conduit@db.example/conduit",
        STORAGE_DATABASE_OVERRIDE="postgres://restorer:pw@other.example:5433/restored",
        CONDUIT_TESTING="1",
    )

    for alias in ("default", "view"):
        db = dbs[alias]
        assert (db["NAME"], db["USER"], db["HOST"], db["PORT"]) == (
            "restored",
            "restorer",
            "other.example",
            "5433",
        )
        assert "pool" not in db["OPTIONS"]  # a short-lived child keeps no pool open
    assert dbs["default"]["TEST"] == {"NAME": "restored"}


def test_a_relative_sqlite_override_stops_startup(tmp_path):
    result = load_settings(tmp_path, STORAGE_DATABASE_OVERRIDE="sqlite://relative.sqlite3")
    assert result.returncode != 0
    assert "STORAGE_DATABASE_OVERRIDE must name an absolute SQLite path" in result.stderr


def test_an_unknown_log_format_is_refused(tmp_path):
    result = load_settings(tmp_path, CONDUIT_LOG_FORMAT="xml")

    assert result.returncode != 0
    assert "CONDUIT_LOG_FORMAT must be text or json, got 'xml'" in result.stderr

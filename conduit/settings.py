"""Settings for Conduit Console, read from environment variables.

Every variable is listed in README.md. Readers in conduit/env.py fail loudly on a
malformed value. Development needs no variables at all; production needs
CONDUIT_PRODUCTION=true and CONDUIT_SECRET_KEY.
"""

import os
from datetime import timedelta
from ipaddress import ip_network
from pathlib import Path
from typing import Any

from django.core.checks.security.base import SECRET_KEY_WARNING_MSG

# Django's own weak-key test, the one behind check --deploy's W009 (private: the stubs
# leave it out, so mypy is told).
from django.core.checks.security.base import (  # type: ignore[attr-defined]
    _check_secret_key as _strong_secret_key,
)
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from conduit.env import (
    env_bool,
    env_database_url,
    env_group_map,
    env_int,
    env_list,
    env_networks,
    env_path,
    env_seconds,
    env_str,
)
from conduit.files import private_folder, private_sqlite_files
from conduit.logs import FORMATS, logging_config
from storage.errors import Invalid
from storage.files import read_or_create_secret
from storage.pg_url import DATABASE_OVERRIDE, PostgresUrl, parse_database_override

BASE_DIR = Path(__file__).resolve().parent.parent

# CONDUIT_TESTING=1 switches to fast, deterministic test behaviour. The test suite sets
# it explicitly (tests/settings.py, which pytest-django loads) and exports it, so the
# processes tests start get the same settings.
TESTING = env_bool("CONDUIT_TESTING", False)
PRODUCTION = env_bool("CONDUIT_PRODUCTION", False)

DEBUG = env_bool("CONDUIT_DEBUG", not PRODUCTION)
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("CONDUIT_DEBUG=true is not allowed with CONDUIT_PRODUCTION=true")

DATA_DIR = env_path("CONDUIT_DATA_DIR", BASE_DIR / "data", base=BASE_DIR)
private_folder(DATA_DIR)
ARTIFACT_DIR = env_path("CONDUIT_ARTIFACT_DIR", DATA_DIR / "artifacts", base=BASE_DIR)
# Routed runs' files: runs/<run>/{control-key, control/, artifacts/} (storage/routed).
ROUTED_STATE_DIR = env_path("CONDUIT_ROUTED_STATE_DIR", DATA_DIR / "routed", base=BASE_DIR)
SQLITE_PATH = env_path("CONDUIT_SQLITE_PATH", DATA_DIR / "conduit.sqlite3", base=BASE_DIR)
# One test database file per pytest process, so concurrent runs never share (and break)
# each other's file; exported so that processes the tests start open the same file.
if TESTING and "CONDUIT_TEST_SQLITE_PATH" not in os.environ:
    os.environ["CONDUIT_TEST_SQLITE_PATH"] = str(DATA_DIR / f"test_conduit_{os.getpid()}.sqlite3")
TEST_SQLITE_PATH = env_path(
    "CONDUIT_TEST_SQLITE_PATH", DATA_DIR / "test_conduit.sqlite3", base=BASE_DIR
)

_secret_key = os.environ.get("CONDUIT_SECRET_KEY", "").strip()
if PRODUCTION and _secret_key and not _strong_secret_key(_secret_key):
    # Django's own test (check --deploy W009), made fatal: a guessable key lets anyone
    # forge session cookies, and a warning nobody reads does not stop that.
    raise ImproperlyConfigured(f"CONDUIT_SECRET_KEY is weak. {SECRET_KEY_WARNING_MSG % 'key'}")
if _secret_key:
    SECRET_KEY = _secret_key
elif PRODUCTION:
    raise ImproperlyConfigured("CONDUIT_SECRET_KEY must be set when CONDUIT_PRODUCTION=true")
else:
    # Generated once per data directory, so sessions survive restarts of `make run`.
    SECRET_KEY = read_or_create_secret(DATA_DIR / "secret_key")

ALLOWED_HOSTS = env_list("CONDUIT_ALLOWED_HOSTS", ["localhost", "127.0.0.1"])

# ---------------------------------------------------------------- behind a proxy
#
# The reverse proxies in front of the console: only a connection from one of these is
# believed about the client's address (X-Forwarded-For) and scheme (X-Forwarded-Proto);
# conduit/proxy.py reads them. Empty: no proxy, the connection's address is the client.
TRUSTED_PROXIES = env_networks("CONDUIT_TRUSTED_PROXIES")
if env_bool("CONDUIT_PROXY_SSL_HEADER", False):
    if not TRUSTED_PROXIES:
        raise ImproperlyConfigured(
            "CONDUIT_PROXY_SSL_HEADER=true needs CONDUIT_TRUSTED_PROXIES: the proxies "
            "whose X-Forwarded-Proto is believed"
        )
    # The proxy terminates TLS and says so; conduit.proxy drops the header from
    # anyone else, so a direct client cannot claim HTTPS.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Origins other than the request's own Host that may POST (a proxy that rewrites Host);
# scheme included: https://console.example.com.
CSRF_TRUSTED_ORIGINS = env_list("CONDUIT_CSRF_TRUSTED_ORIGINS", [])

CONSOLE_READ_ONLY = env_bool("CONSOLE_READ_ONLY", False)
# How late a Timer may be before the console calls it overdue (the dashboards' tile and
# list, the Timers page's overdue tab): a healthy runtime fires a Timer a moment after
# it is due, which is no alarm. One setting for every figure of overdue Timers.
CONSOLE_OVERDUE_GRACE_SECONDS = env_seconds("CONSOLE_OVERDUE_GRACE_SECONDS", 30)
# /metrics (console/metrics/, docs/metrics.md): a scraper is allowed with this bearer
# token (empty: no token is accepted) or from these networks (the client's address as
# conduit/proxy.py reads it). Unset, only the loopback addresses; set empty, none.
METRICS_TOKEN = env_str("CONDUIT_METRICS_TOKEN", "").strip()
METRICS_NETWORKS = (
    env_networks("CONDUIT_METRICS_NETWORKS")
    if "CONDUIT_METRICS_NETWORKS" in os.environ
    else [ip_network("127.0.0.0/8"), ip_network("::1/128")]
)
# Live Work by kind and by Scope: the N largest each, the rest summed as "(other)", so
# a scrape's series stay few whatever kinds and Scopes the store holds.
METRICS_TOP_N = env_int("CONDUIT_METRICS_TOP_N", 20)
if METRICS_TOP_N < 1:
    raise ImproperlyConfigured(f"CONDUIT_METRICS_TOP_N must be 1 or more, got {METRICS_TOP_N}")
# /readyz (console/readiness.py) on SQLite: below this much free space on the
# database's filesystem the host is not ready (a full disk refuses every write).
READY_MIN_FREE_MB = env_int("CONDUIT_READY_MIN_FREE_MB", 64)
# The run page decodes node outputs with the value codecs of whoever wrote the runs: a
# dotted path to a callable returning a storage.run_records.ValueCatalog (or Codecs). The
# project composes it here because neither storage nor the console may import the
# demo; "" means the built-in codecs only (console/run_records/values.py).
CONSOLE_RUN_VALUES = env_str("CONSOLE_RUN_VALUES", "demo.graphs.run_values")
# Where a failed run attempt's error can be found (a run record keeps no error text):
# a sentence the run page shows beside each failed attempt, with {run}, {node} and
# {attempt} filled in. The default names the simulator's log under make run, where
# demo/graphs.py writes that line; a deployment points it at its own runtime's logs.
CONSOLE_RUN_ERRORS = env_str(
    "CONSOLE_RUN_ERRORS",
    "in data/logs/simulate.log: the line 'run {run} node {node} attempt {attempt} failed'",
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "axes",
    "storage",
    "console",
    "demo",
]

MIDDLEWARE = [
    # Before anything logs: the request's ID (the trusted proxy's or a new one) on every
    # log line of the request, and in the response's X-Request-ID.
    "conduit.logs.RequestId",
    # First: nothing may read X-Forwarded-Proto before an untrusted one is dropped.
    "conduit.proxy.ForwardedFromTrustedProxies",
    # Times everything below it, by the view the URL resolved to (docs/metrics.md).
    "console.metrics.middleware.RequestLatency",
    "django.middleware.security.SecurityMiddleware",
    # WhiteNoise serves static files before sessions and auth do any work.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # gzip for what the views answer (not static files, which WhiteNoise answered
    # precompressed above): outside every middleware that reads or writes the body.
    "console.middleware.CompressPages",
    "console.middleware.RefuseNul",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "console.middleware.DatabaseUnavailable",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a lockout raised during sign-in into its page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "conduit.urls"
WSGI_APPLICATION = "conduit.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# ---------------------------------------------------------------- database
#
# Two aliases on one database: "default" writes, "view" reads snapshots. SQLite is the
# default; DATABASE_URL selects PostgreSQL. Why each option is set as it is:
# storage/README.md, "Database settings".

# Lowercase, so it is no setting: Django's debug page would show its password.
_database_url = env_database_url("DATABASE_URL")
# A restore's fencing child is pointed at the restored database through storage's one
# variable (storage.pg_url.DATABASE_OVERRIDE); it wins over DATABASE_URL and the test
# database names, so the child opens exactly what was restored.
try:
    _override = parse_database_override(os.environ.get(DATABASE_OVERRIDE, ""))
except Invalid as exc:
    raise ImproperlyConfigured(str(exc)) from None
if isinstance(_override, PostgresUrl):
    _database_url = _override
elif isinstance(_override, Path):
    _database_url = None
    SQLITE_PATH = TEST_SQLITE_PATH = _override
POSTGRES = _database_url is not None
# Not under test: Django deletes and recreates the test file, and it holds no secrets.
if not POSTGRES and not TESTING:
    private_sqlite_files(SQLITE_PATH)

# cache_size: at most 4 MiB of page cache per connection, so a gunicorn worker (two
# aliases x four threads, a connection each) keeps at most 32 MiB of pages and stays
# under 150 MB; 64 MiB per connection let workers reach 243-297 MB at 100,000 Work, and
# the pages were no faster for it (storage/README.md, "Database settings").
_SQLITE_PRAGMAS = (
    "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; "
    "PRAGMA busy_timeout=30000; PRAGMA foreign_keys=ON; PRAGMA cache_size=-4096;"
)

DATABASES: dict[str, dict[str, Any]] = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        # Under test every process, including ones the tests start, opens the test file,
        # so a test can never write to the development database.
        "NAME": TEST_SQLITE_PATH if TESTING else SQLITE_PATH,
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            "init_command": _SQLITE_PRAGMAS,
        },
        # A file, never :memory:, so WAL and multi-process tests mean something.
        "TEST": {"NAME": TEST_SQLITE_PATH},
    },
    "view": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": TEST_SQLITE_PATH if TESTING else SQLITE_PATH,
        "OPTIONS": {
            "timeout": 30,
            "init_command": _SQLITE_PRAGMAS + " PRAGMA query_only=1;",
        },
        "TEST": {"MIRROR": "default"},
    },
}

if _database_url is not None:
    try:
        from psycopg import IsolationLevel
    except ImportError:
        raise ImproperlyConfigured(
            "DATABASE_URL selects PostgreSQL, which needs psycopg 3: pip install -e '.[postgres]'"
        ) from None

    # Like the SQLite test file: one test database per pytest process, exported so that
    # processes the tests start use it too; tests never touch the configured database.
    if isinstance(_override, PostgresUrl):
        TEST_DATABASE = _override.name
    else:
        if TESTING and "CONDUIT_TEST_DATABASE" not in os.environ:
            os.environ["CONDUIT_TEST_DATABASE"] = f"test_{_database_url.name}_{os.getpid()}"[:63]
        TEST_DATABASE = os.environ.get("CONDUIT_TEST_DATABASE", f"test_{_database_url.name}")

    # Pooling (psycopg_pool, per process and alias): gunicorn's gthread workers keep
    # their connections across requests instead of connecting (a server fork, several
    # ms) for each one, and threads share at most this many. 0 turns the pool off for
    # persistent per-thread connections (for a pooler such as PgBouncer in front).
    # A restore's short-lived fencing child needs one connection, no pool kept open.
    DB_POOL_SIZE = 0 if _override is not None else env_int("CONDUIT_DB_POOL_SIZE", 8)
    if DB_POOL_SIZE < 0:
        raise ImproperlyConfigured(f"CONDUIT_DB_POOL_SIZE must be >= 0, got {DB_POOL_SIZE}")

    def _postgres(url: PostgresUrl, isolation: IsolationLevel, options: str) -> dict[str, Any]:
        driver_options: dict[str, Any] = {
            **url.options,
            "isolation_level": isolation,
            "options": options,  # server settings for the session, as -c name=value
        }
        if DB_POOL_SIZE:
            # min 1: an idle worker holds one connection per alias; timeout: how long a
            # thread waits for a free connection before the request fails.
            driver_options["pool"] = {"min_size": 1, "max_size": DB_POOL_SIZE, "timeout": 10}
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": TEST_DATABASE if TESTING else url.name,
            "USER": url.user,
            "PASSWORD": url.password,
            "HOST": url.host,
            "PORT": url.port,
            "OPTIONS": driver_options,
            # The pool keeps connections; without it, keep each thread's for a minute
            # and check it before reuse, since the server may have closed it meanwhile.
            "CONN_MAX_AGE": 0 if DB_POOL_SIZE else 60,
            "CONN_HEALTH_CHECKS": not DB_POOL_SIZE,
        }

    DATABASES = {
        # lock_timeout bounds the wait for the writers' lock like SQLite's busy timeout;
        # synchronous_commit=on: transact returns after a durable commit even when the
        # server's default was relaxed.
        "default": _postgres(
            _database_url,
            IsolationLevel.SERIALIZABLE,
            "-c lock_timeout=30s -c synchronous_commit=on",
        )
        | {"TEST": {"NAME": TEST_DATABASE}},
        # jit=off: the console's reads are short; a statement of many small index
        # counts (the dashboard's series) is costed high enough for JIT compilation,
        # which took a second to save milliseconds.
        "view": _postgres(
            _database_url,
            IsolationLevel.REPEATABLE_READ,
            "-c default_transaction_read_only=on -c jit=off",
        )
        | {"TEST": {"MIRROR": "default"}},
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# ---------------------------------------------------------------- storage
#
# Storage reads these settings, never the environment (storage/README.md, "Settings").

# Where pg_dump and pg_restore are; empty: the newest /usr/lib/postgresql/*/bin, then PATH.
STORAGE_PG_BINDIR = env_str("CONDUIT_PG_BINDIR", "")
# The distribution whose version a backup manifest records, and the checkout whose git
# commit it records.
STORAGE_DISTRIBUTION = "conduit-console"
STORAGE_CHECKOUT = BASE_DIR
# The manage.py a restore runs its fencing child with.
STORAGE_MANAGE_PY = BASE_DIR / "manage.py"
# How long the record-version log keeps a change (issue 32): `manage.py prune_versions`
# deletes older rows; the console shows a past state only back to there.
STORAGE_VERSION_RETENTION_DAYS = env_int("CONDUIT_VERSION_RETENTION_DAYS", 30)
if STORAGE_VERSION_RETENTION_DAYS < 1:
    raise ImproperlyConfigured(
        f"CONDUIT_VERSION_RETENTION_DAYS must be 1 or more, got {STORAGE_VERSION_RETENTION_DAYS}"
    )

# `make run`'s development operator (manage.py ensure_dev_operator); without a password
# one is generated once into DATA_DIR/dev_password.
DEV_USER = env_str("CONDUIT_DEV_USER", "operator").strip()
DEV_PASSWORD = env_str("CONDUIT_DEV_PASSWORD", "")

# ---------------------------------------------------------------- auth

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

if TESTING:
    # Fast hashing; test passwords protect nothing.
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Sign-in throttling (django-axes). Failures count per (username, address) pair: keyed
# by the address alone, one office behind NAT would lock itself out; by the username
# alone, a stranger could lock any operator out from anywhere. After AXES_FAILURE_LIMIT
# failures that pair is refused (429, registration/locked_out.html) until the cool-off
# passes; a failure meanwhile restarts it; a success clears the count. The address is
# the client's as conduit.proxy.client_address finds it: the connection's own, or
# behind a trusted proxy (CONDUIT_TRUSTED_PROXIES) the right-most X-Forwarded-For entry
# that is not one; never what a client says of itself.
#
# Sign-in through the company's identity provider (OIDC, docs/oidc.md): on when
# CONDUIT_OIDC_CLIENT_ID is set. mozilla-django-oidc's backend, subclassed in
# console/oidc/backend.py, creates the user at first sign-in and re-syncs the mapped
# groups at every sign-in. Local passwords stay on for development and can be turned
# off (CONDUIT_LOCAL_PASSWORDS=false): the login page then offers only the provider,
# a password POST is refused, and ModelBackend leaves the list, so no password
# authenticates anywhere (the admin's login included) and password sessions end.
LOCAL_PASSWORDS = env_bool("CONDUIT_LOCAL_PASSWORDS", True)
OIDC_RP_CLIENT_ID = env_str("CONDUIT_OIDC_CLIENT_ID", "").strip()
OIDC_ENABLED = bool(OIDC_RP_CLIENT_ID)
if not LOCAL_PASSWORDS and not OIDC_ENABLED:
    raise ImproperlyConfigured(
        "CONDUIT_LOCAL_PASSWORDS=false needs an identity provider (CONDUIT_OIDC_CLIENT_ID "
        "and the rest, docs/oidc.md): otherwise nobody can sign in"
    )
OIDC_RP_CLIENT_SECRET = env_str("CONDUIT_OIDC_CLIENT_SECRET", "").strip()
OIDC_OP_AUTHORIZATION_ENDPOINT = env_str("CONDUIT_OIDC_AUTHORIZATION_ENDPOINT", "").strip()
OIDC_OP_TOKEN_ENDPOINT = env_str("CONDUIT_OIDC_TOKEN_ENDPOINT", "").strip()
OIDC_OP_USER_ENDPOINT = env_str("CONDUIT_OIDC_USERINFO_ENDPOINT", "").strip()
OIDC_OP_JWKS_ENDPOINT = env_str("CONDUIT_OIDC_JWKS_ENDPOINT", "").strip()
if OIDC_ENABLED:
    _oidc_missing = [
        name
        for name, value in (
            ("CONDUIT_OIDC_CLIENT_SECRET", OIDC_RP_CLIENT_SECRET),
            ("CONDUIT_OIDC_AUTHORIZATION_ENDPOINT", OIDC_OP_AUTHORIZATION_ENDPOINT),
            ("CONDUIT_OIDC_TOKEN_ENDPOINT", OIDC_OP_TOKEN_ENDPOINT),
            ("CONDUIT_OIDC_USERINFO_ENDPOINT", OIDC_OP_USER_ENDPOINT),
            ("CONDUIT_OIDC_JWKS_ENDPOINT", OIDC_OP_JWKS_ENDPOINT),
        )
        if not value
    ]
    if _oidc_missing:
        raise ImproperlyConfigured(
            f"CONDUIT_OIDC_CLIENT_ID is set, so these are needed too: {', '.join(_oidc_missing)}"
        )
# ID tokens signed with the provider's RSA key, checked against its published JWKS.
OIDC_RP_SIGN_ALGO = env_str("CONDUIT_OIDC_SIGN_ALGO", "RS256").strip()
OIDC_RP_SCOPES = env_str("CONDUIT_OIDC_SCOPES", "openid email profile groups").strip()
# PKCE on top of the client secret and the nonce (RFC 9700 asks it of every client).
OIDC_USE_PKCE = True
OIDC_TIMEOUT = env_seconds("CONDUIT_OIDC_TIMEOUT", 10)
OIDC_CREATE_USER = True
OIDC_AUTHENTICATION_CALLBACK_URL = "oidc_callback"
OIDC_USERNAME_CLAIM = env_str("CONDUIT_OIDC_USERNAME_CLAIM", "preferred_username").strip()
OIDC_GROUPS_CLAIM = env_str("CONDUIT_OIDC_GROUPS_CLAIM", "groups").strip()
# provider group=console group pairs (console/oidc/groups.py reads them).
OIDC_GROUP_MAP = env_group_map("CONDUIT_OIDC_GROUP_MAP")
OIDC_PROVIDER_NAME = env_str("CONDUIT_OIDC_PROVIDER_NAME", "the company's sign-in").strip()

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    *(["django.contrib.auth.backends.ModelBackend"] if LOCAL_PASSWORDS else []),
    *(["console.oidc.backend.ConsoleOIDCBackend"] if OIDC_ENABLED else []),
]
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_CLIENT_IP_CALLABLE = "conduit.proxy.client_address"
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# ---------------------------------------------------------------- i18n and time

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# ---------------------------------------------------------------- static files

STATIC_URL = "static/"
# Where collectstatic writes and WhiteNoise serves from: each console host collects
# its own (docs/deploy.md); the deploy tests point it into their temporary folder.
STATIC_ROOT = env_path("CONDUIT_STATIC_ROOT", BASE_DIR / "staticfiles", base=BASE_DIR)
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        # Tests run without collectstatic, so they cannot use the manifest.
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if TESTING
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
# `make run` collects static files before it serves, so every mode but the tests serves
# the collected copies: hashed, and compressed as .br (the brotli package) and .gz, which
# WhiteNoise picks by Accept-Encoding. From the finders it served every file
# uncompressed, on every page. Tests run without collectstatic: finders there. (Edited
# CSS or JS shows after the next `make run`, which collects again.)
WHITENOISE_USE_FINDERS = TESTING
WHITENOISE_AUTOREFRESH = TESTING

# ---------------------------------------------------------------- security headers

SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
    "base-uri": [CSP.SELF],
}
CSRF_FAILURE_VIEW = "console.misc.csrf_failure"
X_FRAME_OPTIONS = "DENY"
# Scripts never read either cookie (htmx sends the token from the page, base.html), and
# neither goes with a cross-site POST or a subresource from another site.
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

if PRODUCTION:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("CONDUIT_SSL_REDIRECT", True)
    # Readiness probes speak plain HTTP on the loopback interface.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
    SECURE_HSTS_SECONDS = env_int("CONDUIT_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("CONDUIT_HSTS_INCLUDE_SUBDOMAINS", False)
    SECURE_HSTS_PRELOAD = env_bool("CONDUIT_HSTS_PRELOAD", False)
    # check --deploy's W005 and W021 ask for both; each binds every subdomain of the
    # console's domain (preload for good, in browsers' built-in lists), which is the
    # domain owner's choice, not the console's. Off by default, so their reminders are
    # silenced; switched on, Django has nothing to warn about.
    SILENCED_SYSTEM_CHECKS = [
        *([] if SECURE_HSTS_INCLUDE_SUBDOMAINS else ["security.W005"]),
        *([] if SECURE_HSTS_PRELOAD else ["security.W021"]),
    ]

# ---------------------------------------------------------------- logging

# text (the default, make run's): the message alone; json: one JSON object a line with
# the request ID and the call's fields (conduit/logs.py, docs/logging.md). gunicorn's
# own lines follow the same variable (deploy/gunicorn.conf.py's logger_class).
LOG_FORMAT = env_str("CONDUIT_LOG_FORMAT", "text").strip()
if LOG_FORMAT not in FORMATS:
    raise ImproperlyConfigured(f"CONDUIT_LOG_FORMAT must be text or json, got {LOG_FORMAT!r}")
LOGGING = logging_config(LOG_FORMAT, env_str("CONDUIT_LOG_LEVEL", "INFO"))

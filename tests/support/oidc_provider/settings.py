"""The test provider's settings, from the environment tests/support/oidc.py sets:
OIDC_PROVIDER_DB (its SQLite file), OIDC_PROVIDER_KEY (the RS256 private key, PEM),
OIDC_PROVIDER_ADMIN_TOKEN (the directory endpoint's bearer token)."""

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent

ADMIN_TOKEN = os.environ["OIDC_PROVIDER_ADMIN_TOKEN"]
SECRET_KEY = "test-oidc-provider-" + ADMIN_TOKEN
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "tests.support.oidc_provider.urls"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [HERE / "templates"],
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
DATABASES = {
    "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["OIDC_PROVIDER_DB"]}
}
# Tables made straight from the models (migrate --run-syncdb in wsgi.py): the file is
# new for every run, and replaying some forty migrations took most of the start.
MIGRATION_MODULES = dict.fromkeys(("auth", "contenttypes", "sessions", "oauth2_provider"))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LOGIN_URL = "/login/"
# The console and the provider both run on 127.0.0.1 under different ports: cookies
# do not tell ports apart, so each keeps its session under its own name.
SESSION_COOKIE_NAME = "provider_sessionid"
CSRF_COOKIE_NAME = "provider_csrftoken"

OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": Path(os.environ["OIDC_PROVIDER_KEY"]).read_text(),
    "OAUTH2_VALIDATOR_CLASS": "tests.support.oidc_provider.validator.Validator",
    "SCOPES": {
        "openid": "OpenID Connect",
        "email": "E-mail address",
        "profile": "Name and username",
        "groups": "Groups",
    },
    "PKCE_REQUIRED": True,
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
}

"""gunicorn's entry: make the provider's tables in its own new SQLite file, then serve."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.support.oidc_provider.settings")

import django
from django.core.management import call_command
from django.core.wsgi import get_wsgi_application

django.setup()
call_command("migrate", run_syncdb=True, verbosity=0, interactive=False)
application = get_wsgi_application()

"""Create or refresh the development operator account that `make run` prints.

Username and password come from the settings DEV_USER / DEV_PASSWORD; without a
password one is generated once and kept in DATA_DIR/dev_password (mode 0600), so the
account survives restarts with the same credentials.
"""

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from storage.files import read_or_create_secret


class Command(BaseCommand):
    help = "Create or refresh the development operator account (refused in production)."

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.PRODUCTION:
            raise CommandError("ensure_dev_operator refuses to run with CONDUIT_PRODUCTION=true")
        username = settings.DEV_USER
        if not username:
            raise CommandError("the DEV_USER setting (CONDUIT_DEV_USER) must not be empty")
        password_file = settings.DATA_DIR / "dev_password"
        password = settings.DEV_PASSWORD
        source = "from the DEV_PASSWORD setting (CONDUIT_DEV_PASSWORD)"
        if not password:
            password = read_or_create_secret(password_file, nbytes=12)
            source = f"stored in {password_file}"

        user_model = get_user_model()
        user, created = user_model.objects.get_or_create(
            username=username, defaults={"is_staff": True, "is_superuser": True}
        )
        # Keep the printed password true even if someone changed it in the admin.
        if created or not user.check_password(password):
            user.set_password(password)
            user.save(update_fields=["password"])

        self.stdout.write(
            self.style.SUCCESS(
                f"Development operator {'created' if created else 'ready'}:\n"
                f"  username: {username}\n"
                f"  password: {password}  ({source})"
            )
        )

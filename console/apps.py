from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Conduit console"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the system check that CONSOLE_RUN_VALUES loads.
        from console.run_records import values  # noqa: F401

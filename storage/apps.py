from django.apps import AppConfig


class StorageConfig(AppConfig):
    name = "storage"
    verbose_name = "Conduit storage"
    default_auto_field = "django.db.models.BigAutoField"

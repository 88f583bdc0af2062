from django.apps import AppConfig


class WorldAppConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "world_app"
    verbose_name = "Corecraft world"

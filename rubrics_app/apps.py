from django.apps import AppConfig


class RubricsAppConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "rubrics_app"
    verbose_name = "Rubrics and judges"

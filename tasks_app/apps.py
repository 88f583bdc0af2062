from __future__ import annotations

from django.apps import AppConfig, apps
from django.db import DEFAULT_DB_ALIAS
from django.db.models.signals import post_migrate


def _last_app_with_models() -> str:
    return [config.label for config in apps.get_app_configs() if config.models_module is not None][-1]


def sync_role_permissions_after_migrate(sender, using=DEFAULT_DB_ALIAS, apps=None, **kwargs) -> None:
    """After ``migrate`` (or a test flush), give the role groups their permissions.

    post_migrate fires once per app; permissions of every app exist only after the last one.
    """
    if using != DEFAULT_DB_ALIAS or sender.label != _last_app_with_models():
        return
    if apps is not None:
        try:
            apps.get_model("auth", "Permission")
        except LookupError:
            return  # auth is being migrated away
    from tasks_app.role_grants import role_permissions_sync  # imports models: not before the app registry is ready

    role_permissions_sync()


class TasksAppConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "tasks_app"
    verbose_name = "Tasks"

    def ready(self) -> None:
        post_migrate.connect(sync_role_permissions_after_migrate, dispatch_uid="tasks_app.role_permissions_sync")

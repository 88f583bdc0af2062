from django.apps import AppConfig


class TrainerBridgeConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "trainer_bridge"
    verbose_name = "Releases and trainer API"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_save

        from trainer_bridge.authentication import token_cache_forget  # imports models: only once apps are ready

        def user_saved(**kwargs) -> None:
            # A deactivated user's tokens stop working in this process at once (elsewhere within the cache's TTL).
            token_cache_forget()

        post_save.connect(user_saved, sender=get_user_model(), dispatch_uid="trainer_bridge.token_cache_user")

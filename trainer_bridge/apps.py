from django.apps import AppConfig


class TrainerBridgeConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "trainer_bridge"
    verbose_name = "Releases and trainer API"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_delete, post_save

        from rubrics_app.models import JudgeConfig, ModelEndpoint  # models: importable only once apps are ready
        from trainer_bridge.authentication import token_cache_forget  # imports models: only once apps are ready
        from trainer_bridge.trainer_judge import judge_config_forget

        def user_saved(**kwargs) -> None:
            # A deactivated user's tokens stop working in this process at once (elsewhere within the cache's TTL).
            token_cache_forget()

        post_save.connect(user_saved, sender=get_user_model(), dispatch_uid="trainer_bridge.token_cache_user")
        for model in (JudgeConfig, ModelEndpoint):  # the trainer's judge: a change here is seen at once
            for signal in (post_save, post_delete):
                signal.connect(judge_config_forget, sender=model, dispatch_uid=f"trainer_bridge.judge.{model.__name__}")

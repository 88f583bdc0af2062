"""Episodes a trainer opens on rows of a frozen release, and how each was judged (the trainer-time API).

A ``TrainerEpisode`` links one world episode to the release row it was opened for. The row's frozen rubric judges
it when the trainer finishes it; the verdicts and the reward stay on the record, so a retried finish answers with
the same reward and a trainer can read back what it was paid for.
"""

from __future__ import annotations

from django.db import models

from world_app.models import Episode


class TrainerEpisodeStatus(models.TextChoices):
    OPEN = "open"
    FINISHED = "finished"


class TrainerEpisode(models.Model):
    episode = models.OneToOneField(Episode, on_delete=models.CASCADE, related_name="trainer_episode", primary_key=True)
    release = models.ForeignKey("trainer_bridge.Release", on_delete=models.PROTECT, related_name="trainer_episodes")
    row = models.ForeignKey("trainer_bridge.ReleaseRow", on_delete=models.PROTECT, related_name="trainer_episodes")
    split = models.CharField(max_length=10, help_text="The row's split, copied: scope checks read it on every call.")
    token = models.ForeignKey(
        "trainer_bridge.ApiToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="trainer_episodes"
    )
    status = models.CharField(max_length=10, choices=TrainerEpisodeStatus.choices, default=TrainerEpisodeStatus.OPEN)
    final_answer = models.TextField(blank=True)
    messages = models.JSONField(default=list, blank=True, help_text="The trajectory in OpenAI format, if sent.")
    verdicts = models.JSONField(default=list, blank=True)
    reward = models.FloatField(null=True, blank=True, help_text="Null while any criterion is pending.")
    partial_reward = models.FloatField(null=True, blank=True, help_text="Weighted fraction met over judged ones.")
    passed = models.BooleanField(null=True, blank=True)
    final = models.BooleanField(default=False, help_text="Every criterion judged (none pending).")
    trajectory_hash = models.CharField(max_length=64, blank=True, db_index=True)
    reward_options = models.JSONField(
        default=dict, blank=True, help_text="Reward options applied (rubric dropout: rate, seed, kept keys)."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["release", "created_at"], name="trainer_episode_release_idx")]

    def __str__(self) -> str:
        return f"{self.episode_id} ({self.release_id}/{self.row_id}, {self.status})"

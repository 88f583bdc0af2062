"""Input and output shapes of the trainer-time API (episodes for release rows, tool calls, rewards)."""

from __future__ import annotations

from rest_framework import serializers

from trainer_bridge.trainer_services import FINAL_ANSWER_MAX
from world_app.tools.steps import unstorable_field

BATCH_MAX_ITEMS = 512
MESSAGES_MAX = 2_000
UNSTORABLE = "text may not contain NUL (\\u0000) characters or unpaired surrogates"


class _StorableText:
    """Refuses what Postgres cannot store (NUL, lone surrogates) as a 400, not a database error."""

    def validate_final_answer(self, value: str) -> str:
        if unstorable_field(value):
            raise serializers.ValidationError(UNSTORABLE)
        return value

    def validate_messages(self, value: list) -> list:
        bad = unstorable_field(value, "messages")
        if bad:
            raise serializers.ValidationError(f"{bad}: {UNSTORABLE}")
        return value


class EpisodeOpenInputSerializer(serializers.Serializer):
    class Meta:
        ref_name = "TrainerEpisodeOpenInput"

    release = serializers.SlugField(max_length=80, help_text="The frozen release's slug.")
    row_id = serializers.IntegerField(min_value=1, max_value=2**63 - 1, help_text="The row's id, as the rows list it.")
    tools_sha256 = serializers.RegexField(
        r"^[0-9a-f]{64}$",
        required=False,
        help_text="The `tools_sha256` of tool schemas the trainer already holds (from an earlier open): when the "
        "row's are the same, the answer leaves `tools` out (40 KB carried once, not on every open).",
    )


class EpisodeOpenOutputSerializer(serializers.Serializer):
    class Meta:
        ref_name = "TrainerEpisodeOpened"

    episode_id = serializers.UUIDField()
    release = serializers.CharField()
    row_id = serializers.IntegerField()
    split = serializers.CharField()
    snapshot_version = serializers.IntegerField()
    instruction = serializers.CharField()
    tools = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="OpenAI tool schemas, as frozen; left out when the request's `tools_sha256` named them.",
    )
    tools_sha256 = serializers.CharField(
        help_text="sha256 of the canonical JSON of `tools`: send it with the next open to have them left out."
    )
    max_turns = serializers.IntegerField(help_text="The turn budget the row suggests (a hint for the trainer).")
    system_prompt = serializers.CharField(help_text="The agent contract's system prompt (policies included).")
    messages = serializers.ListField(
        child=serializers.DictField(), help_text="The conversation to start from: system prompt, then instruction."
    )
    limits = serializers.DictField(help_text="The contract's limits: max_turns, max_total_tokens, max_wall_s.")
    contract_version = serializers.CharField(help_text="The agent contract's version (recorded on the release).")


class ToolCallInputSerializer(serializers.Serializer):
    class Meta:
        ref_name = "TrainerToolCallInput"

    arguments = serializers.JSONField(
        required=False,
        default=dict,
        help_text="The tool's named arguments, a JSON object. Anything else is the tool's error result, not a 400.",
    )


class ToolCallStepSerializer(serializers.Serializer):
    class Meta:
        ref_name = "TrainerToolStep"

    seq = serializers.IntegerField(help_text="The step's number in the episode's log (1, 2, ...).")
    tool = serializers.CharField()
    duration_ms = serializers.FloatField()


class ToolCallOutputSerializer(serializers.Serializer):
    class Meta:
        ref_name = "TrainerToolCallOutcome"

    result = serializers.JSONField(help_text='The tool\'s answer; a refusal is `{"error": {code, message, field}}`.')
    is_error = serializers.BooleanField()
    step = ToolCallStepSerializer()


class RewardOptionsSerializer(serializers.Serializer):
    class Meta:
        ref_name = "TrainerRewardOptions"

    rubric_dropout = serializers.FloatField(
        min_value=0.0,
        max_value=0.95,
        required=False,
        default=0.0,
        help_text="Share of the row's optional criteria left out of this reward, drawn with `seed` (required ones "
        "are always kept). 0 (the default) judges every criterion.",
    )
    seed = serializers.IntegerField(
        min_value=0,
        max_value=2**63 - 1,
        required=False,
        allow_null=True,
        default=None,
        help_text="The dropout's seed; default: one drawn from the episode id. Give the whole GRPO group one "
        "seed to judge it on the same subset.",
    )


class FinishInputSerializer(_StorableText, serializers.Serializer):
    class Meta:
        ref_name = "TrainerFinishInput"

    final_answer = serializers.CharField(
        allow_blank=True, trim_whitespace=False, max_length=FINAL_ANSWER_MAX, help_text="The agent's final answer."
    )
    messages = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        max_length=MESSAGES_MAX,
        help_text="The trajectory in OpenAI chat format, for the LLM judge and the record (optional).",
    )
    reward_options = RewardOptionsSerializer(required=False, help_text="Training-time reward options (off by default).")


class VerdictSerializer(serializers.Serializer):
    class Meta:
        ref_name = "TrainerVerdict"

    key = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.ChoiceField(choices=["met", "not_met", "pending", "error"])
    met = serializers.BooleanField(allow_null=True)
    rationale = serializers.CharField(allow_blank=True)
    evidence = serializers.JSONField(allow_null=True)
    weight = serializers.FloatField()
    required = serializers.BooleanField()
    content_hash = serializers.CharField(allow_blank=True)


class RewardOutputSerializer(serializers.Serializer):
    class Meta:
        ref_name = "TrainerReward"

    episode_id = serializers.UUIDField()
    release = serializers.CharField()
    row_id = serializers.IntegerField()
    status = serializers.CharField()
    reward = serializers.FloatField(allow_null=True, help_text="Weighted fraction met; null while any is pending.")
    partial_reward = serializers.FloatField(allow_null=True, help_text="Weighted fraction met over judged criteria.")
    passed = serializers.BooleanField(allow_null=True, help_text="Every required criterion met; null if unknown yet.")
    final = serializers.BooleanField(help_text="False when some criteria are pending: the reward is partial.")
    pending = serializers.IntegerField()
    note = serializers.CharField(allow_blank=True, help_text="Why the reward is partial, when it is.")
    verdicts = VerdictSerializer(many=True)
    trajectory_hash = serializers.CharField(allow_blank=True, help_text="The one trajectory hash of the judgement.")
    reward_options = serializers.DictField(help_text="Reward options applied (rubric dropout: rate, seed, kept keys).")


class BatchItemInputSerializer(_StorableText, serializers.Serializer):
    class Meta:
        ref_name = "TrainerBatchItem"

    episode_id = serializers.UUIDField()
    final_answer = serializers.CharField(allow_blank=True, trim_whitespace=False, max_length=FINAL_ANSWER_MAX)
    messages = serializers.ListField(child=serializers.DictField(), required=False, max_length=MESSAGES_MAX)
    reward_options = RewardOptionsSerializer(required=False, help_text="Overrides the batch's reward options.")


class BatchInputSerializer(serializers.Serializer):
    class Meta:
        ref_name = "TrainerBatchInput"

    items = serializers.ListField(
        child=serializers.JSONField(),
        min_length=1,
        max_length=BATCH_MAX_ITEMS,
        help_text="One entry per trajectory of the group: {episode_id, final_answer, messages?}. Each item is "
        "validated and scored on its own; a bad item gets an error in its result, the others are still scored.",
    )
    reward_options = RewardOptionsSerializer(
        required=False, help_text="Reward options for every item (off by default)."
    )


class ApiErrorBodySerializer(serializers.Serializer):
    class Meta:
        ref_name = "TrainerItemError"

    code = serializers.CharField()
    message = serializers.CharField()


ApiErrorBodySerializer._declared_fields["fields"] = serializers.DictField(
    child=serializers.ListField(child=serializers.CharField())
)


class BatchResultSerializer(serializers.Serializer):
    class Meta:
        ref_name = "TrainerBatchResult"

    index = serializers.IntegerField()
    episode_id = serializers.CharField(allow_null=True)
    ok = serializers.BooleanField()
    reward = serializers.FloatField(allow_null=True)
    partial_reward = serializers.FloatField(allow_null=True)
    passed = serializers.BooleanField(allow_null=True)
    final = serializers.BooleanField(allow_null=True)
    note = serializers.CharField(allow_blank=True)
    verdicts = VerdictSerializer(many=True)
    trajectory_hash = serializers.CharField(allow_blank=True)
    reward_options = serializers.DictField()
    error = ApiErrorBodySerializer(allow_null=True)


class BatchOutputSerializer(serializers.Serializer):
    class Meta:
        ref_name = "TrainerBatchOutput"

    results = BatchResultSerializer(many=True)
    scored = serializers.IntegerField()
    failed = serializers.IntegerField()

"""The export API's serializers: query parameters (split, tools), a release's manifest and detail, a row, an export
job. Rows name their tool schemas by ``tools_sha256``; the schemas travel once (``tool_sets``, the tools endpoint,
a jsonl export's tools file)."""

from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers
from rest_framework.request import Request

from trainer_bridge import export_jobs
from trainer_bridge.models import ExportJob, ExportStatus, Split


class SplitQuerySerializer(serializers.Serializer):
    class Meta:
        ref_name = "ReleaseSplitQuery"

    split = serializers.ChoiceField(choices=Split.choices, default=Split.TRAIN, help_text="train or holdout.")


TOOLS_DIGEST, TOOLS_INLINE = "digest", "inline"


class RowsQuerySerializer(SplitQuerySerializer):
    class Meta:
        ref_name = "ReleaseRowsQuery"

    tools = serializers.ChoiceField(
        choices=[TOOLS_DIGEST, TOOLS_INLINE],
        default=TOOLS_DIGEST,
        help_text="digest (default): each row names its tool schemas by tools_sha256, served once by "
        "releases/{slug}/tools/{sha256} and the release's tool_sets; inline: each row carries its tools too.",
    )


class SplitInfoSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    checksum = serializers.CharField()


class ReleaseSplitsSerializer(serializers.Serializer):
    train = SplitInfoSerializer(required=False, help_text="Present for train:read.")
    holdout = SplitInfoSerializer(required=False, help_text="Present for eval:read only.")


class ReleaseOutputSerializer(serializers.Serializer):
    class Meta:
        ref_name = "ReleaseManifest"

    id = serializers.IntegerField()
    slug = serializers.CharField()
    name = serializers.CharField()
    seed = serializers.IntegerField()
    status = serializers.CharField()
    created_at = serializers.DateTimeField()
    frozen_at = serializers.DateTimeField(allow_null=True)
    checksum = serializers.CharField(help_text="sha256 over both splits' checksums and the tool schemas.")
    splits = ReleaseSplitsSerializer(help_text="Only the splits the token may read.")
    strata = serializers.ListField(child=serializers.DictField(), help_text="Counts per type x difficulty x split.")
    snapshot_versions = serializers.ListField(child=serializers.IntegerField())
    tool_names = serializers.ListField(child=serializers.CharField())
    tools_sha256 = serializers.CharField(help_text="The digest of the release's tool schemas (all of them).")
    url = serializers.CharField()
    rows_url = serializers.CharField()


class ReleaseDetailOutputSerializer(ReleaseOutputSerializer):
    class Meta:
        ref_name = "ReleaseDetail"

    tool_sets = serializers.DictField(
        child=serializers.ListField(child=serializers.DictField()),
        help_text="The tool schemas of the readable rows, once: {tools_sha256: [OpenAI tool schemas]}; a row's "
        "tools_sha256 is a key. canonical_sha256 of each list is its key.",
    )


class RowOutputSerializer(serializers.Serializer):
    class Meta:
        ref_name = "ReleaseRow"

    row_id = serializers.IntegerField()
    release = serializers.CharField()
    task_key = serializers.CharField()
    version_id = serializers.IntegerField()
    split = serializers.CharField()
    position = serializers.IntegerField()
    task_type = serializers.CharField()
    difficulty = serializers.CharField(help_text="The author's expected difficulty (same as expected_difficulty).")
    expected_difficulty = serializers.CharField(help_text="The author's expected difficulty (split strata use it).")
    calibrated_difficulty = serializers.CharField(
        help_text="From model rollouts, as frozen (provenance in metadata.calibration); not_calibrated without."
    )
    family = serializers.CharField()
    instruction = serializers.CharField()
    snapshot_version = serializers.IntegerField()
    tools_sha256 = serializers.CharField(
        help_text="The digest of the row's OpenAI tool schemas: GET releases/{slug}/tools/{tools_sha256}, or the "
        "release's tool_sets, resolve it (the same digest a trainer open answers with)."
    )
    tools = serializers.ListField(
        child=serializers.DictField(), required=False, help_text="OpenAI tool schemas: only with tools=inline."
    )
    rubric = serializers.ListField(child=serializers.DictField(), help_text="The frozen criteria of this row.")
    metadata = serializers.DictField()
    simulated_user = serializers.DictField(
        help_text="Who answers the agent's ask_user questions in this row's episodes (facts held back from the "
        "instruction, each with its scripted reply); empty: no one. For the environment, not for the model."
    )
    checksum = serializers.CharField()


class ExportJobOutputSerializer(serializers.Serializer):
    class Meta:
        ref_name = "ExportJob"

    id = serializers.IntegerField()
    release = serializers.CharField(source="release.slug")
    split = serializers.CharField()
    format = serializers.CharField()
    status = serializers.CharField(help_text="queued, running, done or failed.")
    progress = serializers.FloatField()
    rows_written = serializers.IntegerField()
    rows_total = serializers.IntegerField()
    sha256 = serializers.CharField()
    size_bytes = serializers.IntegerField()
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    url = serializers.SerializerMethodField()
    download_url = serializers.SerializerMethodField()
    tools_url = serializers.SerializerMethodField(
        help_text="jsonl only, once done: the export's tools file, {tools_sha256: [schemas]} for its lines."
    )

    def get_url(self, job) -> str:
        return self.context["request"].build_absolute_uri(reverse("trainer_api:export-job", args=[job.pk]))

    def get_download_url(self, job) -> str | None:
        if job.status != ExportStatus.DONE:
            return None
        return self.context["request"].build_absolute_uri(reverse("trainer_api:export-download", args=[job.pk]))

    def get_tools_url(self, job) -> str | None:
        return export_tools_url(self.context["request"], job)


def export_tools_url(request: Request, job: ExportJob) -> str | None:
    if job.status != ExportStatus.DONE or not export_jobs.export_has_tools_file(job):
        return None
    return request.build_absolute_uri(reverse("trainer_api:export-tools", args=[job.pk]))

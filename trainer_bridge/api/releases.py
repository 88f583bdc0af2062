"""The export API: frozen releases, their manifests, rows (paginated JSON and streamed JSONL) and export files.

Every view takes a bearer token (or a staff session) holding train:read or eval:read, and shows only the splits
those scopes open (``selectors.visible_splits``): a train:read token never sees a holdout row, its rubric, or a
count or checksum of the holdout, in any answer or error.
"""

from __future__ import annotations

from django.http import FileResponse, HttpResponse, StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response

from trainer_bridge import export_jobs
from trainer_bridge.auth import HasScope, TokenApiView, token_scopes
from trainer_bridge.exports import CONTENT_TYPES, JsonlLines
from trainer_bridge.models import ExportFormat, ExportJob, ExportStatus, Release, Scope, Split
from trainer_bridge.selectors import (
    release_get,
    release_list,
    release_manifest_for,
    release_row_payload,
    release_row_payloads,
    release_rows,
    release_tools_by_name,
    visible_splits,
)
from world_app.api.exceptions import Conflict
from world_app.api.pagination import ApiPagination, paginated
from world_app.api.views import BAD_INPUT, error_response

READ_SCOPES = HasScope(Scope.TRAIN_READ, Scope.EVAL_READ)


AUTH_ERRORS = {
    401: error_response("No token, an unknown one, or a revoked one: send `Authorization: Bearer <token>`."),
    403: error_response("The token lacks the scope (train:read for the train split, eval:read for the holdout)."),
}
NOT_FOUND = {404: error_response("No frozen release with that slug.")}
SLUG = OpenApiParameter("slug", OpenApiTypes.STR, OpenApiParameter.PATH, description="The release's slug.")
FORMAT = OpenApiParameter(
    "format",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    enum=ExportFormat.values,
    description="jsonl (generic), verl-parquet, or hf (Hugging Face datasets / TRL parquet).",
)
PAGE_PARAMETERS = [
    OpenApiParameter("limit", OpenApiTypes.INT, description="Rows per page (default 50, at most 500)."),
    OpenApiParameter("offset", OpenApiTypes.INT, description="Rows to skip."),
]


class IgnoreAcceptNegotiation(BaseContentNegotiation):
    """File and stream views answer in their own content type whatever the client accepts."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return (renderers[0], renderers[0].media_type)


class SplitQuerySerializer(serializers.Serializer):
    class Meta:
        ref_name = "ReleaseSplitQuery"

    split = serializers.ChoiceField(choices=Split.choices, default=Split.TRAIN, help_text="train or holdout.")


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
    url = serializers.CharField()
    rows_url = serializers.CharField()


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
    tools = serializers.ListField(child=serializers.DictField(), help_text="OpenAI tool schemas.")
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

    def get_url(self, job) -> str:
        return self.context["request"].build_absolute_uri(reverse("trainer_api:export-job", args=[job.pk]))

    def get_download_url(self, job) -> str | None:
        if job.status != ExportStatus.DONE:
            return None
        return self.context["request"].build_absolute_uri(reverse("trainer_api:export-download", args=[job.pk]))


def _splits(request: Request) -> set[str]:
    return visible_splits(token_scopes(request))


def _release_or_404(slug: str) -> Release:
    release = release_get(slug=slug, frozen_only=True)
    if release is None:
        raise exceptions.NotFound("No frozen release with that slug.", code="release_not_found")
    return release


def _split_or_403(request: Request, split: str) -> str:
    if split not in _splits(request):
        needed = Scope.EVAL_READ if split == Split.HOLDOUT else Scope.TRAIN_READ
        raise exceptions.PermissionDenied(f"Reading the {split} split needs the {needed} scope.")
    return split


def _query_split(request: Request) -> str:
    query = SplitQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return _split_or_403(request, query.validated_data["split"])


def _manifest(request: Request, release: Release) -> dict:
    data = release_manifest_for(release=release, splits=_splits(request))
    data["url"] = request.build_absolute_uri(reverse("trainer_api:release-detail", args=[release.slug]))
    data["rows_url"] = request.build_absolute_uri(reverse("trainer_api:release-rows", args=[release.slug]))
    return data


class ReleaseListApi(TokenApiView):
    permission_classes = [READ_SCOPES]

    @extend_schema(
        operation_id="releases_list",
        summary="Frozen releases, newest first (each with the splits this token may read)",
        parameters=PAGE_PARAMETERS,
        responses={200: paginated(ReleaseOutputSerializer), **AUTH_ERRORS},
    )
    def get(self, request: Request) -> Response:
        paginator = ApiPagination()
        page = paginator.paginate_queryset(release_list(frozen_only=True), request, view=self)
        return paginator.get_paginated_response([_manifest(request, release) for release in page])


class ReleaseDetailApi(TokenApiView):
    permission_classes = [READ_SCOPES]

    @extend_schema(
        operation_id="releases_retrieve",
        summary="A release's manifest: seed, checksums, per split and per stratum counts (readable splits only)",
        parameters=[SLUG],
        responses={200: ReleaseOutputSerializer, **AUTH_ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, slug: str) -> Response:
        return Response(_manifest(request, _release_or_404(slug)))


class ReleaseRowListApi(TokenApiView):
    permission_classes = [READ_SCOPES]

    @extend_schema(
        operation_id="releases_rows_list",
        summary="A split's rows, paginated (instruction, tool schemas, rubric, snapshot, metadata)",
        parameters=[SLUG, SplitQuerySerializer, *PAGE_PARAMETERS],
        responses={200: paginated(RowOutputSerializer), **BAD_INPUT, **AUTH_ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, slug: str) -> Response:
        release = _release_or_404(slug)
        split = _query_split(request)
        paginator = ApiPagination()
        page = paginator.paginate_queryset(release_rows(release=release, split=split), request, view=self)
        tools = release_tools_by_name(release)
        rows = [release_row_payload(row, release=release, tools_by_name=tools) for row in page]
        return paginator.get_paginated_response(rows)


class ReleaseRowStreamApi(TokenApiView):
    permission_classes = [READ_SCOPES]
    content_negotiation_class = IgnoreAcceptNegotiation

    @extend_schema(
        operation_id="releases_rows_jsonl",
        summary="A split's rows as JSON lines, streamed (one row per line, in position order)",
        parameters=[SLUG, SplitQuerySerializer],
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.BINARY, description="One row per line."),
            **BAD_INPUT,
            **AUTH_ERRORS,
            **NOT_FOUND,
        },
    )
    def get(self, request: Request, slug: str) -> StreamingHttpResponse:
        release = _release_or_404(slug)
        split = _query_split(request)
        encoder = JsonlLines()
        lines = (encoder.line(payload) for payload in release_row_payloads(release=release, split=split))
        response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
        response["Content-Disposition"] = f'inline; filename="{release.slug}-{split}.jsonl"'
        return response


def _file_response(request: Request, job: ExportJob) -> HttpResponse:
    etag = job.etag
    if etag and etag in [tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")]:
        response = HttpResponse(status=status.HTTP_304_NOT_MODIFIED)
        response["ETag"] = etag
        return response
    path = export_jobs.export_file_path(job)
    response = FileResponse(
        path.open("rb"),
        content_type=CONTENT_TYPES[job.format],
        as_attachment=True,
        filename=f"{job.release.slug}-{job.split}-{job.format}{path.suffix}",
    )
    response["ETag"] = etag
    response["Cache-Control"] = "private, max-age=0, must-revalidate"
    return response


EXPORT_RESPONSES = {
    (200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY, description="The file, with an ETag."),
    202: OpenApiResponse(ExportJobOutputSerializer, description="Being written: poll the job's url."),
    304: OpenApiResponse(description="If-None-Match named the file's ETag."),
}


class ReleaseExportApi(TokenApiView):
    permission_classes = [READ_SCOPES]
    content_negotiation_class = IgnoreAcceptNegotiation

    @extend_schema(
        operation_id="releases_export",
        summary="Download a split in a format: the file (with ETag) when it is ready, else 202 and the job",
        parameters=[SLUG, FORMAT, SplitQuerySerializer],
        responses={**EXPORT_RESPONSES, **BAD_INPUT, **AUTH_ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, slug: str, format: str) -> HttpResponse:
        release = _release_or_404(slug)
        if format not in ExportFormat.values:
            raise exceptions.ValidationError({"format": [f"One of {', '.join(ExportFormat.values)}."]})
        split = _query_split(request)
        job = export_jobs.export_request(release=release, split=split, format=format, user=request.user)
        if export_jobs.export_file_ready(job):
            return _file_response(request, job)
        body = ExportJobOutputSerializer(job, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


def _job_or_404(request: Request, job_id: int) -> ExportJob:
    job = ExportJob.objects.select_related("release").filter(pk=job_id).first()
    # A job of a split the token may not read is reported as missing, not as forbidden.
    if job is None or job.split not in _splits(request):
        raise exceptions.NotFound("No export job with that id.", code="export_not_found")
    return job


JOB_ID = OpenApiParameter("job_id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The export job's id.")


class ExportJobDetailApi(TokenApiView):
    permission_classes = [READ_SCOPES]

    @extend_schema(
        operation_id="exports_retrieve",
        summary="An export job: status, progress, and the download url once done",
        parameters=[JOB_ID],
        responses={200: ExportJobOutputSerializer, **AUTH_ERRORS, 404: error_response("No export job with that id.")},
    )
    def get(self, request: Request, job_id: int) -> Response:
        return Response(ExportJobOutputSerializer(_job_or_404(request, job_id), context={"request": request}).data)


class ExportJobDownloadApi(TokenApiView):
    permission_classes = [READ_SCOPES]
    content_negotiation_class = IgnoreAcceptNegotiation

    @extend_schema(
        operation_id="exports_download",
        summary="An export job's file (ETag; If-None-Match answers 304)",
        parameters=[JOB_ID],
        responses={
            (200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY),
            304: OpenApiResponse(description="Not modified."),
            409: error_response("The file is not written yet."),
            **AUTH_ERRORS,
            404: error_response("No export job with that id."),
        },
    )
    def get(self, request: Request, job_id: int) -> HttpResponse:
        job = _job_or_404(request, job_id)
        if not export_jobs.export_file_ready(job):
            raise Conflict(f"The export is {job.status}; poll the job until it is done.", code="export_not_ready")
        return _file_response(request, job)

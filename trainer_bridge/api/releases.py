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
from rest_framework import exceptions, status
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response

from trainer_bridge import export_jobs
from trainer_bridge.api.release_serializers import (
    TOOLS_INLINE,
    ExportJobOutputSerializer,
    ReleaseDetailOutputSerializer,
    ReleaseOutputSerializer,
    RowOutputSerializer,
    RowsQuerySerializer,
    SplitQuerySerializer,
    export_tools_url,
)
from trainer_bridge.auth import HasScope, TokenApiView, token_scopes
from trainer_bridge.exports import CONTENT_TYPES, JsonlLines
from trainer_bridge.models import ExportFormat, ExportJob, Release, Scope, Split
from trainer_bridge.selectors import (
    ReleaseToolSets,
    release_get,
    release_list,
    release_manifest_for,
    release_row_payload,
    release_row_payloads,
    release_rows,
    release_tool_sets,
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
    description="jsonl (generic; each row names its tool schemas by tools_sha256, the job's tools file holds them "
    "once), jsonl-inline (generic, the schemas on every line; also jsonl with tools=inline), verl-parquet, or hf "
    "(Hugging Face datasets / TRL parquet).",
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


def readable_splits(request: Request) -> set[str]:
    return visible_splits(token_scopes(request))


def release_or_404(slug: str) -> Release:
    release = release_get(slug=slug, frozen_only=True)
    if release is None:
        raise exceptions.NotFound("No frozen release with that slug.", code="release_not_found")
    return release


def _split_or_403(request: Request, split: str) -> str:
    if split not in readable_splits(request):
        needed = Scope.EVAL_READ if split == Split.HOLDOUT else Scope.TRAIN_READ
        raise exceptions.PermissionDenied(f"Reading the {split} split needs the {needed} scope.")
    return split


def _query_split(request: Request) -> str:
    query = SplitQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return _split_or_403(request, query.validated_data["split"])


def _query_rows(request: Request) -> tuple[str, bool]:
    """The split and whether rows carry their tools inline."""
    query = RowsQuerySerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    return _split_or_403(request, query.validated_data["split"]), query.validated_data["tools"] == TOOLS_INLINE


def _manifest(request: Request, release: Release) -> dict:
    data = release_manifest_for(release=release, splits=readable_splits(request))
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
        responses={200: ReleaseDetailOutputSerializer, **AUTH_ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, slug: str) -> Response:
        release = release_or_404(slug)
        data = _manifest(request, release)
        data["tool_sets"] = release_tool_sets(release=release, splits=readable_splits(request))
        return Response(data)


class ReleaseRowListApi(TokenApiView):
    permission_classes = [READ_SCOPES]

    @extend_schema(
        operation_id="releases_rows_list",
        summary="A split's rows, paginated (instruction, tools_sha256, rubric, snapshot, metadata)",
        parameters=[SLUG, RowsQuerySerializer, *PAGE_PARAMETERS],
        responses={200: paginated(RowOutputSerializer), **BAD_INPUT, **AUTH_ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, slug: str) -> Response:
        release = release_or_404(slug)
        split, inline = _query_rows(request)
        paginator = ApiPagination()
        page = paginator.paginate_queryset(release_rows(release=release, split=split), request, view=self)
        tools = ReleaseToolSets(release)
        rows = [release_row_payload(row, release=release, tool_sets=tools, inline_tools=inline) for row in page]
        return paginator.get_paginated_response(rows)


class ReleaseRowStreamApi(TokenApiView):
    permission_classes = [READ_SCOPES]
    content_negotiation_class = IgnoreAcceptNegotiation

    @extend_schema(
        operation_id="releases_rows_jsonl",
        summary="A split's rows as JSON lines, streamed (one row per line, in position order)",
        parameters=[SLUG, RowsQuerySerializer],
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(
                OpenApiTypes.BINARY, description="One row per line (a ReleaseRow), every line the same shape."
            ),
            **BAD_INPUT,
            **AUTH_ERRORS,
            **NOT_FOUND,
        },
    )
    def get(self, request: Request, slug: str) -> StreamingHttpResponse:
        release = release_or_404(slug)
        split, inline = _query_rows(request)
        encoder = JsonlLines(inline_tools=inline)
        payloads = release_row_payloads(release=release, split=split, inline_tools=inline)
        lines = (encoder.line(payload) for payload in payloads)
        response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
        response["Content-Disposition"] = f'inline; filename="{release.slug}-{split}.jsonl"'
        return response


def _file_response(request: Request, job: ExportJob) -> HttpResponse:
    etag = job.etag
    if etag and etag in [tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")]:
        response = HttpResponse(status=status.HTTP_304_NOT_MODIFIED)
        response["ETag"] = etag
        _name_tools_file(request, job, response)
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
    _name_tools_file(request, job, response)
    return response


def _name_tools_file(request: Request, job: ExportJob, response: HttpResponse) -> None:
    """A jsonl export's answer names its tools file (``Tools-Url``), the schemas its lines name by digest."""
    tools_url = export_tools_url(request, job)
    if tools_url:
        response["Tools-Url"] = tools_url


EXPORT_RESPONSES = {
    (200, "application/octet-stream"): OpenApiResponse(
        OpenApiTypes.BINARY,
        description="The file, with an ETag; a jsonl file's answer names its tools file in the Tools-Url header.",
    ),
    202: OpenApiResponse(ExportJobOutputSerializer, description="Being written: poll the job's url."),
    304: OpenApiResponse(description="If-None-Match named the file's ETag."),
}


class ReleaseExportApi(TokenApiView):
    permission_classes = [READ_SCOPES]
    content_negotiation_class = IgnoreAcceptNegotiation

    @extend_schema(
        operation_id="releases_export",
        summary="Download a split in a format: the file (with ETag) when it is ready, else 202 and the job",
        parameters=[SLUG, FORMAT, RowsQuerySerializer],
        responses={**EXPORT_RESPONSES, **BAD_INPUT, **AUTH_ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, slug: str, format: str) -> HttpResponse:
        release = release_or_404(slug)
        if format not in ExportFormat.values:
            raise exceptions.ValidationError({"format": [f"One of {', '.join(ExportFormat.values)}."]})
        split, inline = _query_rows(request)
        if "tools" in request.query_params and format != ExportFormat.JSONL:
            raise exceptions.ValidationError({"tools": ["Only the jsonl export takes tools (digest or inline)."]})
        if inline:
            format = ExportFormat.JSONL_INLINE
        job = export_jobs.export_request(release=release, split=split, format=format, user=request.user)
        if export_jobs.export_file_ready(job):
            return _file_response(request, job)
        body = ExportJobOutputSerializer(job, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})


def job_or_404(request: Request, job_id: int) -> ExportJob:
    job = ExportJob.objects.select_related("release").filter(pk=job_id).first()
    # A job of a split the token may not read is reported as missing, not as forbidden.
    if job is None or job.split not in readable_splits(request):
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
        return Response(ExportJobOutputSerializer(job_or_404(request, job_id), context={"request": request}).data)


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
        job = job_or_404(request, job_id)
        if not export_jobs.export_file_ready(job):
            raise Conflict(f"The export is {job.status}; poll the job until it is done.", code="export_not_ready")
        return _file_response(request, job)

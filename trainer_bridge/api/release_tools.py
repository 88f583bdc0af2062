"""The tool schemas of a release, once: a tool list by its digest (what a row's ``tools_sha256`` names) and a
jsonl export's tools file. Rows and JSONL lines name their schemas by digest instead of repeating 40 KB each."""

from __future__ import annotations

import re

from django.http import FileResponse, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response

from trainer_bridge import export_jobs
from trainer_bridge.api.releases import (
    AUTH_ERRORS,
    JOB_ID,
    READ_SCOPES,
    SLUG,
    IgnoreAcceptNegotiation,
    job_or_404,
    readable_splits,
    release_or_404,
)
from trainer_bridge.auth import TokenApiView
from trainer_bridge.selectors import release_tool_sets
from world_app.api.exceptions import Conflict
from world_app.api.views import BAD_INPUT, error_response

SHA256 = re.compile(r"[0-9a-f]{64}")
DIGEST = OpenApiParameter(
    "sha256", OpenApiTypes.STR, OpenApiParameter.PATH, description="A row's tools_sha256 (64 lowercase hex digits)."
)


class ToolSetOutputSerializer(serializers.Serializer):
    class Meta:
        ref_name = "ReleaseToolSet"

    tools_sha256 = serializers.CharField(help_text="canonical_sha256 of tools.")
    tools = serializers.ListField(child=serializers.DictField(), help_text="OpenAI tool schemas, as frozen.")


class ReleaseToolSetApi(TokenApiView):
    permission_classes = [READ_SCOPES]

    @extend_schema(
        operation_id="releases_tools_retrieve",
        summary="The tool schemas a row's tools_sha256 names (cache them by digest: they never change)",
        parameters=[SLUG, DIGEST],
        responses={
            200: ToolSetOutputSerializer,
            **BAD_INPUT,
            **AUTH_ERRORS,
            404: error_response("No frozen release with that slug, or no readable row names that digest."),
        },
    )
    def get(self, request: Request, slug: str, sha256: str) -> Response:
        release = release_or_404(slug)
        if not SHA256.fullmatch(sha256):
            raise exceptions.ValidationError({"sha256": ["A tools_sha256: 64 lowercase hex digits."]})
        tools = release_tool_sets(release=release, splits=readable_splits(request)).get(sha256)
        if tools is None:
            raise exceptions.NotFound("No row of this release you may read names those tools.", code="tools_not_found")
        response = Response({"tools_sha256": sha256, "tools": tools})
        response["Cache-Control"] = "private, max-age=86400, immutable"
        return response


class ExportJobToolsApi(TokenApiView):
    permission_classes = [READ_SCOPES]
    content_negotiation_class = IgnoreAcceptNegotiation

    @extend_schema(
        operation_id="exports_tools",
        summary="A jsonl export's tools file: {tools_sha256: [OpenAI tool schemas]} for the digests its lines name",
        parameters=[JOB_ID],
        responses={
            (200, "application/json"): OpenApiResponse(OpenApiTypes.OBJECT),
            409: error_response("The file is not written yet."),
            **AUTH_ERRORS,
            404: error_response("No export job with that id, or one whose rows carry their tools (not jsonl)."),
        },
    )
    def get(self, request: Request, job_id: int) -> HttpResponse:
        job = job_or_404(request, job_id)
        if not export_jobs.export_has_tools_file(job):
            raise exceptions.NotFound("This export has no tools file: its rows carry or name their tools.")
        if not export_jobs.export_file_ready(job):
            raise Conflict(f"The export is {job.status}; poll the job until it is done.", code="export_not_ready")
        path = export_jobs.export_tools_path(job)
        return FileResponse(
            path.open("rb"),
            content_type="application/json",
            as_attachment=True,
            filename=f"{job.release.slug}-{job.split}-{job.format}.tools.json",
        )

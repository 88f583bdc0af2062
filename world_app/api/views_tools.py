"""The tool views of the API: the tool list in each schema format, one tool, and a call of a tool inside an
episode (a tool's own refusal is its result, 200 with ``is_error: true``, not an HTTP error)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from world_app.api.negotiation import AcceptHeaderNegotiation
from world_app.api.parsers import StrictJSONParser
from world_app.api.services import episode_tool_call
from world_app.api.views import (
    AUTH_ERRORS,
    BAD_INPUT,
    EPISODE_ID,
    TOOL_NAME,
    EpisodesAccess,
    error_response,
    owned_episode_id,
)
from world_app.tools import get_tool, tool_schemas

SCHEMA_FORMATS = ("openai", "openai-strict", "mcp", "registry")
JSON_TYPE_NAMES = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


class ToolListApi(APIView):
    content_negotiation_class = AcceptHeaderNegotiation

    class InputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ToolListQuery"

        format = serializers.ChoiceField(
            choices=SCHEMA_FORMATS,
            default="openai",
            help_text="openai: `tools` entries of the OpenAI API; openai-strict: the same for `strict: true` "
            "function calling (every argument required, optionals nullable, maps as {name, value} lists); compact: "
            "the same tools in fewer tokens (shorter parameter texts, no keywords the tools enforce); mcp: MCP "
            "`tools/list` entries; registry: name, group, description, input_schema.",
        )

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ToolList"

        format = serializers.CharField()
        count = serializers.IntegerField()
        tools = serializers.ListField(child=serializers.DictField(), help_text="One schema per tool, in order.")

    @extend_schema(
        operation_id="tools_list",
        summary="The tool schemas, ready for an LLM API",
        parameters=[InputSerializer],
        responses={200: OutputSerializer, **BAD_INPUT, **AUTH_ERRORS},
        tags=["tools"],
    )
    def get(self, request: Request) -> Response:
        query = self.InputSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        schemas = tool_schemas(query.validated_data["format"])
        return Response({"format": query.validated_data["format"], "count": len(schemas), "tools": schemas})


class ToolDetailApi(APIView):
    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ToolDetail"

        name = serializers.CharField()
        group = serializers.ChoiceField(choices=("search", "read", "compute", "write"))
        summary = serializers.CharField()
        description = serializers.CharField()
        input_schema = serializers.DictField(help_text="The JSON Schema of the tool's arguments.")

    @extend_schema(
        operation_id="tools_retrieve",
        summary="One tool: its description and the JSON Schema of its arguments",
        parameters=[TOOL_NAME],
        responses={200: OutputSerializer, 404: error_response("No tool with that name."), **AUTH_ERRORS},
        tags=["tools"],
    )
    def get(self, request: Request, name: str) -> Response:
        found = get_tool(name)
        if found is None:
            raise exceptions.NotFound(f"there is no tool named {name!r}", code="unknown_tool")
        return Response({**found.as_dict(), "summary": found.summary})


def _unstorable_text(value: Any, path: str = "body") -> str | None:
    """Where a string holds a NUL or an unpaired surrogate (the episode log, jsonb, cannot keep either)."""
    if isinstance(value, str):
        if "\x00" in value or any("\ud800" <= char <= "\udfff" for char in value):
            return path
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _unstorable_text(key, path) or _unstorable_text(item, f"{path}.{key}")
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _unstorable_text(item, f"{path}[{index}]")
            if found:
                return found
    return None


class EpisodeToolCallApi(APIView):
    permission_classes = [EpisodesAccess]
    parser_classes = [StrictJSONParser]

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ToolCallOutcome"

        episode = serializers.UUIDField()
        seq = serializers.IntegerField(help_text="The step's number in the episode's log (1, 2, ...).")
        tool = serializers.CharField()
        result = serializers.DictField(help_text='The tool\'s answer; a refusal is `{"error": {code, message}}`.')
        is_error = serializers.BooleanField(help_text="True when the tool refused or the arguments were invalid.")
        duration_ms = serializers.FloatField(help_text="Time the tool took inside the episode's world.")

    @extend_schema(
        operation_id="episodes_tools_call",
        summary="Call a tool in the episode; the call is appended to its log",
        description="The body is the tool's arguments, a JSON object (`{}` or an empty body for none). Invalid "
        "arguments and refusals by the business rules come back as the tool's result with `is_error: true` and "
        "status 200: the agent is meant to read them. A body that is not a JSON object is a 400.",
        parameters=[EPISODE_ID, TOOL_NAME],
        request={"application/json": OpenApiTypes.OBJECT},
        responses={
            200: OutputSerializer,
            **BAD_INPUT,
            404: error_response("No such episode, or no such tool."),
            409: error_response("The episode is closed: it takes no more steps."),
            **AUTH_ERRORS,
        },
        tags=["episodes"],
    )
    def post(self, request: Request, episode_id: str, name: str) -> Response:
        found_id = owned_episode_id(request, episode_id)
        if get_tool(name) is None:
            raise exceptions.NotFound(
                f"there is no tool named {name!r}; GET /api/v1/tools/ lists them", code="unknown_tool"
            )
        arguments = request.data
        if not isinstance(arguments, dict):
            kind = JSON_TYPE_NAMES.get(type(arguments), "null")
            raise serializers.ValidationError(
                {"body": [f"the body must be a JSON object of the tool's named arguments, not {kind}"]}
            )
        bad_text = _unstorable_text(arguments)
        if bad_text:
            raise serializers.ValidationError(
                {bad_text: ["text may not contain NUL (\\u0000) characters or unpaired surrogates"]}
            )
        step = episode_tool_call(episode_id=found_id, name=name, arguments=arguments)
        data = {
            "episode": found_id,
            "seq": step.seq,
            "tool": step.name,
            "result": step.result,
            "is_error": step.is_error,
            "duration_ms": step.duration_ms,
        }
        return Response(self.OutputSerializer(data).data)

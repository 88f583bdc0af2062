import json

from django.core.management.base import BaseCommand

from world_app.tools import all_tools, tool_schemas
from world_app.tools.registry import SCHEMA_FORMATS


class Command(BaseCommand):
    help = "Print the agent tool registry: names, groups, descriptions and JSON Schemas."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print JSON instead of a table.")
        parser.add_argument(
            "--format",
            choices=list(SCHEMA_FORMATS),
            default="registry",
            dest="schema_format",
            help="With --json: registry entries (name, group, description, input_schema), OpenAI tools, OpenAI "
            "strict tools (all arguments required, optionals nullable), the compact rendering (same tools, fewer "
            "tokens: world_app.contract) or MCP tools. --format alone implies --json.",
        )

    def handle(self, *args, as_json: bool, schema_format: str, **options):
        if not as_json and schema_format == "registry":
            self._table()
            return
        self.stdout.write(json.dumps(tool_schemas(schema_format), indent=2))

    def _table(self) -> None:
        tools = all_tools()
        width = max(len(t.name) for t in tools)
        for t in tools:
            arguments = ", ".join(t.input_schema()["properties"])
            self.stdout.write(f"{t.group:<8} {t.name:<{width}}  {t.summary}")
            self.stdout.write(f"{'':<8} {'':<{width}}  args: {arguments}")
        world = sum(1 for t in tools if t.group != "conversation")
        self.stdout.write(f"{len(tools)} tools ({world} world tools, {len(tools) - world} conversation)")

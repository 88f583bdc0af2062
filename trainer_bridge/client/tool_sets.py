"""Tool schema lists by their digest, for the client: rows, JSONL lines and episode opens name a row's tool schemas
by ``tools_sha256`` (the sha256 of the list's canonical JSON) and the schemas travel once. Standard library only.

``read_jsonl`` reads a downloaded ``jsonl`` export beside its tools file and gives each row its ``tools`` back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

TOOL_SETS_HELD = 16  # tool schema sets a client keeps by digest (one per distinct set of tools among the rows)


def tools_digest(tools: list[dict]) -> str:
    """``tools_sha256`` of a list of schemas: the sha256 of its canonical JSON (sorted keys, compact, UTF-8)."""
    text = json.dumps(tools, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def jsonl_tools_path(path: str | Path) -> Path:
    """Where the client keeps a downloaded ``jsonl`` export's tools file: ``train.jsonl`` -> ``train.tools.json``."""
    path = Path(path)
    return path.with_name(f"{path.stem}.tools.json")


class ToolSets:
    """At most ``size`` tool schema lists by digest, the oldest dropped first; ``newest`` is the last one put."""

    def __init__(self, size: int = TOOL_SETS_HELD) -> None:
        self.size = size
        self._sets: dict[str, list[dict]] = {}
        self.newest = ""

    def get(self, digest: str) -> list[dict] | None:
        return self._sets.get(digest)

    def put(self, digest: str, tools: list[dict]) -> list[dict]:
        if digest not in self._sets and len(self._sets) >= self.size:
            self._sets.pop(next(iter(self._sets)))
        self._sets[digest] = list(tools)
        self.newest = digest
        return self._sets[digest]

    def __contains__(self, digest: str) -> bool:
        return digest in self._sets


def read_tool_sets(path: str | Path) -> dict[str, list[dict]]:
    """A tools file (``{tools_sha256: [schemas]}``), each list checked against its digest."""
    sets = json.loads(Path(path).read_text(encoding="utf-8"))
    for digest, tools in sets.items():
        if tools_digest(tools) != digest:
            raise ValueError(f"{path}: the tools under {digest} do not hash to it")
    return sets


def with_tools(row: dict, tool_sets: dict[str, list[dict]]) -> dict:
    """``row`` with its ``tools`` resolved from ``tools_sha256`` (a row that carries them is returned as is)."""
    if "tools" in row or not row.get("tools_sha256"):
        return row
    tools = tool_sets.get(row["tools_sha256"])
    if tools is None:
        raise KeyError(f"row {row.get('row_id')}: no tools file entry for tools_sha256 {row['tools_sha256']}")
    return {**row, "tools": tools}


def read_jsonl(path: str | Path, *, tools_path: str | Path | None = None) -> Iterator[dict]:
    """The rows of a downloaded JSONL export, each with its ``tools``: a ``jsonl`` file's lines name them by
    ``tools_sha256`` and its tools file (default: ``jsonl_tools_path(path)``, where ``download_export`` puts it)
    holds them; a ``jsonl-inline`` file's lines carry them already and need no tools file."""
    path = Path(path)
    tools_file = Path(tools_path) if tools_path is not None else jsonl_tools_path(path)
    tool_sets: dict[str, list[dict]] | None = None
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            row = json.loads(line)
            if "tools" not in row and row.get("tools_sha256"):
                if tool_sets is None:
                    tool_sets = read_tool_sets(tools_file)
                row = with_tools(row, tool_sets)
            yield row

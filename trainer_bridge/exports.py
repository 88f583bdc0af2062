"""Streaming writers of a frozen release's split: generic JSONL, verl parquet and Hugging Face datasets / TRL parquet.

Every writer reads the rows with ``QuerySet.iterator(chunk_size)`` and writes them as it goes (a JSONL line per
row, a parquet row group per chunk), so memory stays flat however large the release is.

verl: the columns follow verl's own multi-turn tool-agent preprocessing example
(volcengine/verl ``examples/data_preprocess/gsm8k_tool_agent_loop.py``): ``data_source``, ``agent_name``,
``prompt`` (a chat list), ``ability``, ``reward_model`` {``style``, ``ground_truth``} and ``extra_info``
{``split``, ``index``, ``need_tools_kwargs``, ``tools_kwargs`` {tool: {``create_kwargs``}}, ``interaction_kwargs``}.
Our extra_info adds ``release``, ``row_id`` and ``task_key``: the agent loop of ``trainer_bridge.verl_agent``
("corecraft_agent") opens the episode from them, and the reward comes from our reward endpoint, so
``ground_truth`` names the row rather than holding an answer.

Generic JSONL: one line per row, the API's row. ``jsonl`` names the row's tool schemas by ``tools_sha256`` (the
digest a trainer open answers with) and the export's tools file holds each list once; ``jsonl-inline`` repeats
them on every line (``tools``), for consumers that read each line alone. Both keep every line the same shape.

Hugging Face / TRL: a conversational ``prompt`` column (a list of {role, content} messages, the format
``GRPOTrainer`` accepts) plus the columns a reward function or ``environment_factory`` needs to reach the episode
and reward endpoints: ``release``, ``row_id``, ``task_key``, ``split``; ``tools`` and ``rubric`` travel as JSON
strings (their nested shapes differ per tool, which a columnar schema would pad out).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import IO

import pyarrow as pa
import pyarrow.parquet as pq

from trainer_bridge.models import ExportFormat, Release
from trainer_bridge.selectors import release_row_payloads
from world_app.contract import agent_contract

CHUNK = 1000
DATA_SOURCE = "corecraft"
AGENT_NAME = "corecraft_agent"
ABILITY = "agentic_tool_use"
EXTENSIONS = {
    ExportFormat.JSONL: "jsonl",
    ExportFormat.JSONL_INLINE: "jsonl",
    ExportFormat.VERL_PARQUET: "parquet",
    ExportFormat.HF: "parquet",
}
CONTENT_TYPES = {
    ExportFormat.JSONL: "application/x-ndjson",
    ExportFormat.JSONL_INLINE: "application/x-ndjson",
    ExportFormat.VERL_PARQUET: "application/vnd.apache.parquet",
    ExportFormat.HF: "application/vnd.apache.parquet",
}

Progress = Callable[[int], None]


def release_system_prompt(release: Release) -> str:
    """The system prompt of the agent contract the release was frozen under (today's for older releases)."""
    return (release.contract or {}).get("system_prompt") or agent_contract().system_prompt


def chat_prompt(instruction: str, system_prompt: str | None = None) -> list[dict]:
    """The prompt column: the agent contract's system prompt and the instruction, as every consumer gets them."""
    prompt = system_prompt if system_prompt is not None else agent_contract().system_prompt
    return [{"role": "system", "content": prompt}, {"role": "user", "content": instruction}]


def jsonl_record(payload: dict) -> dict:
    """The generic JSONL row: the API's row (instruction, tools_sha256, rubric, snapshot, metadata)."""
    return payload


def verl_record(payload: dict, index: int, *, system_prompt: str | None = None) -> dict:
    ref = {"release": payload["release"], "row_id": payload["row_id"]}
    return {
        "data_source": DATA_SOURCE,
        "agent_name": AGENT_NAME,
        "prompt": chat_prompt(payload["instruction"], system_prompt),
        "ability": ABILITY,
        "reward_model": {"style": "rule", "ground_truth": json.dumps(ref, sort_keys=True)},
        "extra_info": {
            "split": payload["split"],
            "index": index,
            "release": payload["release"],
            "row_id": payload["row_id"],
            "task_key": payload["task_key"],
            "task_type": payload["task_type"],
            "expected_difficulty": payload["expected_difficulty"],
            "calibrated_difficulty": payload["calibrated_difficulty"],
            "snapshot_version": payload["snapshot_version"],
            "need_tools_kwargs": True,
            "tools_kwargs": {schema["function"]["name"]: {"create_kwargs": ref} for schema in payload["tools"]},
            "interaction_kwargs": {"name": AGENT_NAME, **ref},
        },
    }


def hf_record(payload: dict, *, system_prompt: str | None = None) -> dict:
    return {
        "prompt": chat_prompt(payload["instruction"], system_prompt),
        "release": payload["release"],
        "row_id": payload["row_id"],
        "task_key": payload["task_key"],
        "split": payload["split"],
        "task_type": payload["task_type"],
        "expected_difficulty": payload["expected_difficulty"],
        "calibrated_difficulty": payload["calibrated_difficulty"],
        "snapshot_version": payload["snapshot_version"],
        "tools": json.dumps(payload["tools"], sort_keys=True),
        "rubric": json.dumps(payload["rubric"], sort_keys=True),
    }


_MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string())])
_REF_FIELDS = [("release", pa.string()), ("row_id", pa.int64())]
_REF = pa.struct(_REF_FIELDS)


def verl_schema(tool_names: list[str]) -> pa.Schema:
    tools_kwargs = pa.struct([(name, pa.struct([("create_kwargs", _REF)])) for name in tool_names])
    extra_info = pa.struct(
        [
            ("split", pa.string()),
            ("index", pa.int64()),
            ("release", pa.string()),
            ("row_id", pa.int64()),
            ("task_key", pa.string()),
            ("task_type", pa.string()),
            ("expected_difficulty", pa.string()),
            ("calibrated_difficulty", pa.string()),
            ("snapshot_version", pa.int64()),
            ("need_tools_kwargs", pa.bool_()),
            ("tools_kwargs", tools_kwargs),
            ("interaction_kwargs", pa.struct([("name", pa.string()), *_REF_FIELDS])),
        ]
    )
    return pa.schema(
        [
            ("data_source", pa.string()),
            ("agent_name", pa.string()),
            ("prompt", pa.list_(_MESSAGE)),
            ("ability", pa.string()),
            ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
            ("extra_info", extra_info),
        ]
    )


HF_SCHEMA = pa.schema(
    [
        ("prompt", pa.list_(_MESSAGE)),
        ("release", pa.string()),
        ("row_id", pa.int64()),
        ("task_key", pa.string()),
        ("split", pa.string()),
        ("task_type", pa.string()),
        ("expected_difficulty", pa.string()),
        ("calibrated_difficulty", pa.string()),
        ("snapshot_version", pa.int64()),
        ("tools", pa.string()),
        ("rubric", pa.string()),
    ]
)


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


class JsonlLines:
    """JSON lines of row payloads, every line the same shape.

    By default a line names its tool schemas by ``tools_sha256`` and leaves them out (they are served once: the
    export's tools file, ``releases/<slug>/tools/<sha256>``); ``inline_tools`` keeps the standalone lines of old,
    each with its ``tools``, encoded once per distinct tool list and spliced in rather than encoded on every row.
    """

    def __init__(self, *, inline_tools: bool = False) -> None:
        self.inline_tools = inline_tools
        self._tools: dict[str, str] = {}

    def line(self, payload: dict) -> str:
        payload = dict(payload)
        tools = payload.pop("tools", None)
        head = json.dumps(jsonl_record(payload), ensure_ascii=False, sort_keys=True, default=str)
        if not self.inline_tools:
            return head + "\n"
        if tools is None:
            raise ValueError("inline tools need payloads with their tools (release_row_payloads(inline_tools=True))")
        encoded = self._tools.get(payload["tools_sha256"])
        if encoded is None:
            encoded = self._tools[payload["tools_sha256"]] = json.dumps(tools, ensure_ascii=False, sort_keys=True)
        return f'{head[:-1]}, "tools": {encoded}}}\n'


def write_jsonl(
    payloads: Iterable[dict], out: IO[bytes], *, progress: Progress | None = None, inline_tools: bool = False
) -> int:
    lines = JsonlLines(inline_tools=inline_tools)
    written = 0
    for payload in payloads:
        out.write(lines.line(payload).encode())
        written += 1
        if progress and written % CHUNK == 0:
            progress(written)
    return written


def write_tool_sets(tool_sets: dict[str, list[dict]], out: IO[bytes]) -> None:
    """The tools file of a JSONL export: ``{tools_sha256: [OpenAI tool schemas]}`` for every digest its lines name
    (``canonical_sha256`` of each list is its key, so a reader can check it)."""
    out.write(json.dumps(tool_sets, ensure_ascii=False, sort_keys=True).encode())


def _write_parquet(records: Iterable[dict], out: IO[bytes], schema: pa.Schema, *, progress: Progress | None) -> int:
    written = 0
    with pq.ParquetWriter(out, schema, compression="zstd") as writer:
        for batch in _chunks(records, CHUNK):
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            written += len(batch)
            if progress:
                progress(written)
    return written


def write_verl_parquet(
    payloads: Iterable[dict],
    out: IO[bytes],
    *,
    tool_names: list[str],
    progress: Progress | None = None,
    system_prompt: str | None = None,
) -> int:
    records = (verl_record(payload, index, system_prompt=system_prompt) for index, payload in enumerate(payloads))
    return _write_parquet(records, out, verl_schema(tool_names), progress=progress)


def write_hf_parquet(
    payloads: Iterable[dict], out: IO[bytes], *, progress: Progress | None = None, system_prompt: str | None = None
) -> int:
    records = (hf_record(p, system_prompt=system_prompt) for p in payloads)
    return _write_parquet(records, out, HF_SCHEMA, progress=progress)


def export_write(*, release: Release, split: str, format: str, out: IO[bytes], progress: Progress | None = None) -> int:
    """Write one split of ``release`` in ``format`` to ``out``, streaming; returns the number of rows."""
    inline_tools = format != ExportFormat.JSONL  # the parquet writers read a row's tools; jsonl names them
    payloads = release_row_payloads(release=release, split=split, chunk_size=CHUNK, inline_tools=inline_tools)
    if format in (ExportFormat.JSONL, ExportFormat.JSONL_INLINE):
        return write_jsonl(payloads, out, progress=progress, inline_tools=inline_tools)
    if format == ExportFormat.VERL_PARQUET:
        tool_names = [schema["function"]["name"] for schema in release.tools or []]
        return write_verl_parquet(
            payloads, out, tool_names=tool_names, progress=progress, system_prompt=release_system_prompt(release)
        )
    if format == ExportFormat.HF:
        return write_hf_parquet(payloads, out, progress=progress, system_prompt=release_system_prompt(release))
    raise ValueError(f"unknown export format {format!r}")

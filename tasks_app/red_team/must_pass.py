"""Builders of the must-pass policies: reordered reads, an extra read, a bigger page, other formats, a rewording."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

from corecraft_site.canonical import sorted_json
from tasks_app.red_team.kinds import CONVERSATION, Replay, entity_ids_in, registry_tool, tool_group

# --- must pass -------------------------------------------------------------------------------------------------


def reordered_reads(instruction: str, calls: list[dict], results: list) -> list[dict] | None:
    """The reads of each run between writes (and questions to the user) in reverse order where no read needs an id
    an earlier one gave."""
    given = set(entity_ids_in(instruction))
    order: list[int] = []
    segment: list[int] = []

    def flush() -> None:
        placed: list[int] = []
        remaining = list(segment)
        while remaining:
            ready = [
                j
                for j in remaining
                if not any(
                    i in remaining
                    and i < j
                    and (set(entity_ids_in(calls[j]["arguments"])) - given) & set(entity_ids_in(results[i]))
                    for i in segment
                )
            ]
            pick = max(ready) if ready else min(remaining)
            placed.append(pick)
            remaining.remove(pick)
        order.extend(placed)
        segment.clear()

    for index, call in enumerate(calls):
        if tool_group(call["tool"]) in ("write", CONVERSATION):  # a question stays where it is: reads may use its reply
            flush()
            order.append(index)
        else:
            segment.append(index)
    flush()
    if order == list(range(len(calls))):
        return None
    return [calls[i] for i in order]


_HARMLESS_READS: tuple[tuple[str, str, Callable[[str], dict]], ...] = (
    ("get_product", "prd", lambda i: {"product_id": i}),
    ("get_order_details", "ord", lambda i: {"order_id": i}),
    ("get_customer_ticket_history", "cus", lambda i: {"customer_id": i}),
    ("search_knowledge_base", "", lambda i: {"query": "shipping"}),
)


def harmless_read(calls: list[dict], results: list, replay: Replay) -> dict | None:
    used = {c["tool"] for c in calls}
    named = entity_ids_in([c["arguments"] for c in calls]) + entity_ids_in(results)
    for tool, prefix, arguments_for in _HARMLESS_READS:
        if tool in used:
            continue
        targets = [i for i in named if i.split("-", 1)[0] == prefix] if prefix else [""]
        if not targets:
            continue
        call = {"tool": tool, "arguments": arguments_for(targets[0])}
        result = replay([call])[0]
        if not (isinstance(result, dict) and "error" in result):
            return call
    return None


def _query(call: dict) -> tuple:
    rest = {k: v for k, v in call["arguments"].items() if k not in ("offset", "limit")}
    return call["tool"], sorted_json(rest)


def _row_ids(result: Any) -> list[str]:
    items = result.get("items") if isinstance(result, dict) else None
    if not isinstance(items, list):
        return []
    return [str(item.get("id")) for item in items if isinstance(item, dict)]


def bigger_page(calls: list[dict], results: list, replay: Replay) -> list[dict] | None:
    """The first paged read's pages as one call (offset = the first page's, limit = what the pages covered)."""
    groups: dict[tuple, list[int]] = {}
    for index, call in enumerate(calls):
        groups.setdefault(_query(call), []).append(index)
    for indexes in groups.values():
        offsets = [int(calls[i]["arguments"].get("offset") or 0) for i in indexes]
        if len(indexes) < 2 or max(offsets) <= 0:
            continue
        tool = registry_tool(calls[indexes[0]]["tool"])
        if tool is None:
            continue
        limit_schema = tool.input_schema().get("properties", {}).get("limit", {})
        default_limit = int(limit_schema.get("default") or 10)
        maximum = int(limit_schema.get("maximum") or default_limit)
        start = min(offsets)
        end = max(
            o + int(calls[i]["arguments"].get("limit") or default_limit) for i, o in zip(indexes, offsets, strict=True)
        )
        seen = [row for i in indexes for row in _row_ids(results[i])]
        if end - start > maximum or not seen:
            continue
        arguments = {**calls[indexes[0]]["arguments"], "offset": start, "limit": min(end - start, maximum)}
        if start == 0:
            arguments.pop("offset")
        big = {"tool": tool.name, "arguments": arguments}
        if sorted(_row_ids(replay([big])[0])) != sorted(set(seen)):
            continue
        out = [c for i, c in enumerate(calls) if i not in indexes[1:]]
        out[indexes[0]] = big
        return out
    return None


_MONEY = re.compile(r"\$\s?(\d[\d,]*(?:\.\d+)?)")
_ISO = re.compile(r"(?<![\d-])(\d{4})-(\d{2})-(\d{2})(?![\d-])")
_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                "November", "December")  # fmt: skip


def answer_reformatted(answer: str) -> str:
    """Money as "1234.50 USD" instead of "$1,234.50"; ISO dates as "September 15, 2025"."""

    def money(match: re.Match) -> str:
        try:
            value = Decimal(match.group(1).replace(",", "").rstrip("."))
        except ArithmeticError:
            return match.group(0)
        tail = "." if match.group(1).endswith(".") else ""
        return f"{value:.2f} USD{tail}"

    def iso(match: re.Match) -> str:
        try:
            day = date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        except ValueError:
            return match.group(0)
        return f"{_MONTH_NAMES[day.month - 1]} {day.day}, {day.year}"

    return _ISO.sub(iso, _MONEY.sub(money, answer))


_SYNONYMS = (
    ("I'm sorry", "I apologise"),
    ("Sorry", "Apologies"),
    ("sorry", "apologetic"),
    ("Unfortunately", "Regrettably"),
    ("unfortunately", "regrettably"),
    ("Please", "Kindly"),
    ("I checked", "I looked into"),
    ("I've checked", "I have looked into"),
    ("happy to", "glad to"),
    ("right away", "promptly"),
    ("Thanks for", "Thank you for"),
    ("let me know", "tell me"),
    ("Let me know", "Tell me"),
    ("quickly", "swiftly"),
)
_GREETING = re.compile(r"^(hi|hello|dear|hey)\b[^\n,!.]*[,!.]?", re.I)
_SIGN_OFF = re.compile(
    r"(best regards|kind regards|warm regards|regards|best|thanks|thank you|cheers|sincerely)[,!.]?"
    r"(?=\s*(\n|$|corecraft))",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_LIST_ITEM = re.compile(r"^\s*(\d+[.)]|[-*•])\s")


def answer_reworded(answer: str) -> str:
    """A deterministic rewording with the same facts: other greeting and sign-off, filler synonyms, and the body
    paragraphs (or, in a one-paragraph body, its sentences) in another order."""
    text = answer.strip()
    greeting = _GREETING.match(text)
    name = ""
    if greeting:
        words = greeting.group(0).rstrip(",!.").split()
        name = " ".join(words[1:])
        text = text[greeting.end() :].lstrip()
    for old, new in _SYNONYMS:
        text = re.sub(rf"\b{re.escape(old)}\b", new, text)
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    closing = ""
    if paragraphs and _SIGN_OFF.search(paragraphs[-1]) and len(paragraphs[-1]) < 80:
        closing = paragraphs.pop()
    if len(paragraphs) >= 2:
        paragraphs = [paragraphs[-1], *paragraphs[:-1]]
    elif len(paragraphs) == 1 and "\n" not in paragraphs[0]:
        sentences = _SENTENCE.split(paragraphs[0])
        if len(sentences) >= 2 and not any(_LIST_ITEM.match(s) for s in sentences):
            paragraphs = [" ".join([*sentences[1:], sentences[0]])]
    closing = _SIGN_OFF.sub("Many thanks", closing, count=1) if closing else "Many thanks,\nCorecraft Support"
    opening = f"Hello {name}," if name else "Hello,"
    return "\n\n".join([opening, *paragraphs, closing])

"""Validation of criteria as authors write them (``criteria_validate``), the warnings on their text, and the
content hash of a criterion. What each kind's spec checks is ``rubrics_app.criterion_specs``; every problem is
reported under its path (``criteria[1].spec.value``).
"""

from __future__ import annotations

import re
import uuid

from django.core.exceptions import ValidationError as DjangoValidationError
from pydantic import Field, ValidationError

from corecraft_site.canonical import sorted_json_sha256
from rubrics_app.criterion_specs import SPEC_MODELS, StrictModel
from rubrics_app.models import CriterionCategory, CriterionKind


class CriterionInput(StrictModel):
    """A criterion as an author submits it; ``key`` is kept when it continues a criterion of an earlier version."""

    key: uuid.UUID | None = None
    kind: CriterionKind
    text: str = Field(min_length=1, max_length=2000)
    spec: dict = Field(default_factory=dict)
    weight: float = Field(1.0, gt=0, le=100)
    category: CriterionCategory
    required: bool = False


def _add_problems(problems: dict[str, list[str]], exc: ValidationError, *, prefix: str) -> None:
    """Each error of a Pydantic ``exc`` under its path (``criteria[0].spec.filters[1].field``) in ``problems``."""
    for err in exc.errors(include_url=False):
        path = prefix + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"])
        message = err["msg"].removeprefix("Value error, ")
        # A spec's model validator can only say "field: reason" (a ValueError): fold the field into the path, here,
        # so that no caller reads the text.
        head, sep, rest = message.partition(": ")
        if sep and re.fullmatch(r"[\w.\[\]]+", head):
            path, message = f"{path}.{head}", rest
        problems.setdefault(path, []).append(message)


def criteria_validate(items: list[dict]) -> list[CriterionInput]:
    """Validate every criterion, normalised. Raises one Django ``ValidationError({path: [why, ...]})`` with every
    problem under the path it is about (``criteria[1].spec.value``; ``criteria`` when ``items`` is no list): read
    it with ``corecraft_site.service_errors.error_fields`` (or ``error_lines`` for text)."""
    if not isinstance(items, list):
        raise DjangoValidationError({"criteria": ["must be a list"]})
    valid, keys = [], set()
    problems: dict[str, list[str]] = {}
    for index, item in enumerate(items):
        try:
            criterion = CriterionInput.model_validate(item)
        except ValidationError as exc:
            _add_problems(problems, exc, prefix=f"criteria[{index}]")
            continue
        try:
            spec = SPEC_MODELS[criterion.kind].model_validate(criterion.spec)
        except ValidationError as exc:
            _add_problems(problems, exc, prefix=f"criteria[{index}].spec")
            continue
        criterion.spec = spec.model_dump(mode="json", exclude_none=True)
        if criterion.key is not None:
            if criterion.key in keys:
                problems.setdefault(f"criteria[{index}].key", []).append(f"{criterion.key} appears twice")
            keys.add(criterion.key)
        valid.append(criterion)
    if problems:
        raise DjangoValidationError(problems)
    return valid


_JOINERS = re.compile(r",(?!\d)\s*(?:and\s+|or\s+)?|;\s*|\s+and\s+|\s+as well as\s+|\s+plus\s+", re.IGNORECASE)
_CHECK_START = re.compile(
    r"(?:the|its|his|her|their|a|an|that|whether|states?|names?|says?|gives?|lists?|mentions?|explains?|offers?|"
    r"confirms?|includes?|is|are|was|has|have)\b",
    re.IGNORECASE,
)


def criterion_text_warnings(text: str) -> list[str]:
    """Why a criterion's text reads as several checks in one ("states the amount, the date and the reason").

    A compound criterion is met or not as a whole, so a policy that satisfies part of it is paid or punished for
    all of it: one fact per criterion. The warning never blocks a save.
    """
    parts = [part.strip() for part in _JOINERS.split(text or "") if part and part.strip()]
    if len(parts) >= 3 or (len(parts) == 2 and _CHECK_START.match(parts[1])):
        listed = "; ".join(repr(p[:40]) for p in parts[:4])
        return [
            f"this text joins {len(parts)} checks ({listed}): a reply that meets some of them is judged as if it "
            "met all, so split it into one criterion per fact"
        ]
    return []


def criteria_warnings(items: list[dict]) -> list[str]:
    """Non-blocking warnings about criteria as submitted, as ``criteria[i].text: why`` (see
    ``criterion_text_warnings``)."""
    found = []
    for index, item in enumerate(items if isinstance(items, list) else []):
        text = item.get("text", "") if isinstance(item, dict) else getattr(item, "text", "")
        found.extend(f"criteria[{index}].text: {why}" for why in criterion_text_warnings(text))
    return found


def criterion_content_hash(*, kind: str, text: str, spec: dict, weight: float, category: str, required: bool) -> str:
    """What the criterion checks, hashed: position and key are left out, so moving a criterion keeps its hash."""
    payload = {"kind": kind, "text": text, "spec": spec, "weight": weight, "category": category, "required": required}
    return sorted_json_sha256(payload)

"""What every programmatic verdict shares: the statuses and the verdict dict a criterion's check returns.

A verdict is ``{key, kind, content_hash, status: met|not_met|pending|error, met, rationale, evidence, weight,
required}``; ``llm`` criteria stay ``pending`` until the LLM judge rules on them.
"""

from __future__ import annotations

from typing import Any

MET, NOT_MET, PENDING = "met", "not_met", "pending"
# The LLM judge's status for a criterion it could not decide (invalid output, endpoint down): neither met nor not.
ERROR = "error"
EVIDENCE_ROWS = 5


def verdict(criterion, status: str, rationale: str, evidence: Any = None) -> dict:
    return {
        "key": str(criterion.key),
        "kind": criterion.kind,
        "content_hash": criterion.content_hash,
        "status": status,
        "met": None if status == PENDING else status == MET,
        "rationale": rationale,
        "evidence": evidence,
        "weight": criterion.weight,
        "required": criterion.required,
    }

"""Rubrics that measure what they say: a task's criteria moved onto the primitives a dump, a spray, an echo or a
negation cannot meet, from its reference solution, the reference's tool results and its diff.

``criteria_harden`` is how the starter library was migrated (its YAML holds the result) and how every family
instance is built (``tasks_app.library.families.base``). Each change is checked on the reference itself and on the
valid alternatives of it (other money and date formats, a rewording): a conversion the reference or an
alternative would fail is not made, and the old criterion stays. What it does:

- a ``number`` criterion on an amount the answer states becomes ``amount`` bound to the words it is stated for
  (found in the criterion's text, else next to the amount in the reference answer);
- ``contains`` criteria on entity ids become one ``id_set`` per kind: exactly the ids of that kind the reference
  answer names (extras and misses count against);
- keyword ``regex`` / ``contains`` criteria become negation-aware ``affirms`` claims;
- "read past the first page" (an ``offset >= N`` argument) becomes "saw the rows" of the later pages, by any
  offset and limit;
- every task gets a required "no other changes" criterion (``only_changes``) built from the reference's diff:
  the rows and fields it changes and how many rows it creates (read-only tasks: no change at all); a
  ``not_called`` criterion on a write tool of a read-only task is replaced by it;
- every task gets a required reply-format criterion (``prose``) and a required "saw" criterion on the ids the
  answer names from tool results (facts the agent looked up, not echoed from the instruction);
- a ``contains`` / ``regex`` criterion on a money amount ("227.79") becomes ``amount`` bound to its subject, as a
  ``number`` one does (the amount anywhere, a dump's included, met it);
- weights: the answer's facts (the new ops) and its format carry at least ``FACT_SHARE`` of the programmatic
  weight, so an answer that only repeats the reference's calls loses that much reward; and the *guards*, the
  criteria a trajectory that does nothing meets (no other changes, a tool not called, a row that must not
  exist), carry at most ``GUARD_SHARE`` of it: they stay required, so a trajectory that breaks one fails, but
  partial reward measures progress on the task's point, and doing nothing is none.

The package: ``conversions`` (one criterion at a time), ``changes`` (the state criteria of a reference's diff,
and the reference's trace), ``harden`` (the whole rubric and its weights).
"""

from tasks_app.library.rubric_hardening.changes import allowed_changes, needed_changes, reference_trace
from tasks_app.library.rubric_hardening.conversions import SAW_MAX_IDS
from tasks_app.library.rubric_hardening.harden import (
    FACT_SHARE,
    GUARD_SHARE,
    criteria_harden,
    criteria_reharden,
    is_guard,
)

__all__ = [
    "FACT_SHARE",
    "GUARD_SHARE",
    "SAW_MAX_IDS",
    "allowed_changes",
    "criteria_harden",
    "criteria_reharden",
    "is_guard",
    "needed_changes",
    "reference_trace",
]

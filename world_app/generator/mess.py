"""Realistic mess at a controlled rate, and the record of where it was put.

Each section asks the plan how much mess of a kind to make and records what it made, so the manifest can
name every deliberate anomaly (see ``ANOMALY_KINDS`` for what each kind is and why validation accepts it).
"""

from __future__ import annotations

import random

from world_app.generator.manifest import ANOMALY_KINDS, AnomalyRecord
from world_app.generator.vocabulary import NICKNAMES


class MessPlan:
    def __init__(self, *, seed: int, rate: float, scale: float) -> None:
        if not 0 <= rate <= 0.5:
            raise ValueError("the mess rate must be between 0 and 0.5")
        self.rate = rate
        self.scale = scale
        self.rng = random.Random(f"{seed}:mess")
        self.anomalies: dict[str, list[AnomalyRecord]] = {kind: [] for kind in ANOMALY_KINDS}

    def share(self, population: int) -> int:
        """How many of ``population`` records get a kind of mess that scales with the data."""
        return round(self.rate * population)

    def handful(self) -> int:
        """How many contradictions of one kind: a few per 1,000 customers at the default rate."""
        if self.rate <= 0:
            return 0
        return max(1, round(self.rate * 100 * self.scale))

    def pick(self, candidates: list, count: int) -> list:
        """``count`` candidates, in their given order (the candidates' order must be deterministic)."""
        if count <= 0 or not candidates:
            return []
        chosen = sorted(self.rng.sample(range(len(candidates)), min(count, len(candidates))))
        return [candidates[i] for i in chosen]

    def record(self, kind: str, record_id: str, *, related: tuple[str, ...] = (), note: str = "") -> None:
        self.anomalies[kind].append(AnomalyRecord(record_id, tuple(related), note))

    def sorted_anomalies(self) -> dict[str, list[AnomalyRecord]]:
        return {kind: sorted(records, key=lambda r: r.id) for kind, records in self.anomalies.items()}


def duplicate_first_name(rng: random.Random, first_name: str) -> str:
    """The name a person signs up with the second time: a nickname, or the same."""
    nickname = NICKNAMES.get(first_name)
    if nickname and rng.random() < 0.7:
        return nickname
    return first_name


def duplicate_email(rng: random.Random, email: str, *, first_name: str, last_name: str) -> str:
    """Another address of the same person: a dotted Gmail variant, a plus tag, or another provider."""
    local, _, domain = email.partition("@")
    roll = rng.random()
    if domain == "gmail.com" and roll < 0.4:
        return (local.replace(".", "") if "." in local else f"{local[:1]}.{local[1:]}") + "@gmail.com"
    if roll < 0.6:
        return f"{local}+{rng.choice(('shop', 'pc', 'orders', 'deals'))}@{domain}"
    other = "outlook.com" if domain != "outlook.com" else "icloud.com"
    return f"{first_name[:1].lower()}{last_name.lower()}{rng.randint(1, 99)}@{other}"


TIER_CLAIM_NOTES = (
    "Customer states they are a {claimed} member and expects the {claimed} discount on every order.",
    "Per phone call: says a rep upgraded them to {claimed} last year. Not verified.",
    "{claimed_title} member (per customer). Wants the loyalty discount applied to open orders.",
)

PAYMENT_SHORT_NOTE = (
    "Processor settled ${paid} against a ${total} total after a currency-rounding error on the card network; "
    "finance wrote off the {gap}-cent difference."
)

"""What a generated world holds: counts, and where its deliberate mess is, so tasks can be grounded on it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

# Mess of each kind, what it looks like in the data, and whether model validation (full_clean) sees it.
ANOMALY_KINDS: dict[str, str] = {
    "duplicate_customer": "A second account of the same person (nickname or email variant, same phone and "
    "address). full_clean accepts it: emails are not unique, as in real CRMs.",
    "order_missing_shipping_data": "An old phone order whose address, carrier, service and ETA were never keyed "
    "in; its shipment still exists. full_clean accepts it: shipping fields are optional.",
    "discontinued_in_old_order": "An order, placed while the product was sold, of a product since discontinued "
    "or at end of life. Consistent data; listed so tasks can use it.",
    "backorder": "A recent order holding an out-of-stock, backorderable product: payment authorized, nothing "
    "shipped. Consistent data.",
    "payment_short_by_cents": "The captured payment is a few cents below the order total; the order's notes say "
    "why. full_clean accepts it (no model rule ties a payment's amount to the order total); the payment-sum "
    "invariant is knowingly broken.",
    "duplicate_charge": "The same order was charged twice (two completed payments of the total) and the "
    "customer has a billing ticket about it. full_clean accepts it; the payment-sum invariant is knowingly broken.",
    "tier_claim_mismatch": "The customer's notes claim a loyalty tier the customer does not have, and a ticket "
    "asks for that tier's discount. full_clean accepts it (notes are free text).",
    "delivered_but_reported_missing": "The carrier shows the shipment delivered, yet the customer's open ticket "
    "says it never arrived. full_clean accepts it (a claim is not a record).",
    "warranty_term_mismatch": "The product's description states a warranty term other than its warranty_months "
    "(the record is the truth). full_clean accepts it (descriptions are free text).",
}


@dataclass(frozen=True)
class AnomalyRecord:
    id: str
    related: tuple[str, ...] = ()
    note: str = ""


@dataclass
class WorldManifest:
    seed: int
    scale: float
    mess_rate: float
    world_now: str
    counts: dict[str, int] = field(default_factory=dict)
    child_counts: dict[str, int] = field(default_factory=dict)
    anomalies: dict[str, list[AnomalyRecord]] = field(default_factory=dict)
    # Records worth grounding tasks on that are not mess (warranty boundaries, open return windows...).
    scenarios: dict[str, list[str]] = field(default_factory=dict)
    checksum: str = ""

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def anomaly_ids(self, kind: str) -> list[str]:
        return [record.id for record in self.anomalies.get(kind, [])]

    def as_dict(self) -> dict:
        data = asdict(self)
        data["total"] = self.total
        data["anomalies"] = {
            kind: [{"id": r.id, "related": list(r.related), "note": r.note} for r in records]
            for kind, records in self.anomalies.items()
        }
        return data

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict) -> WorldManifest:
        return cls(
            seed=data["seed"],
            scale=data["scale"],
            mess_rate=data["mess_rate"],
            world_now=data["world_now"],
            counts=dict(data.get("counts", {})),
            child_counts=dict(data.get("child_counts", {})),
            anomalies={
                kind: [AnomalyRecord(r["id"], tuple(r.get("related", ())), r.get("note", "")) for r in records]
                for kind, records in data.get("anomalies", {}).items()
            },
            scenarios={kind: list(ids) for kind, ids in data.get("scenarios", {}).items()},
            checksum=data.get("checksum", ""),
        )

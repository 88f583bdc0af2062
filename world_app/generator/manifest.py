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
    # The casebook's (world_app/generator/casebook.py): cases a real store has, appended after the base world.
    "split_shipment": "An order shipped in two parcels, each naming its lines (Shipment.line_items); both left. "
    "Consistent data.",
    "partial_shipment": "An order of which one parcel has left (maybe arrived) and the rest waits for stock: the "
    "order stays paid until its last parcel ships. Consistent data.",
    "lost_parcel": "The carrier declared a parcel lost (shipment status exception, last event 'parcel lost'); "
    "business orders were reshipped in a new parcel. Consistent data.",
    "disputed_payment": "The customer's bank opened a chargeback (payment status disputed, the order's notes say "
    "when and why). Consistent data; a refund on top would pay twice.",
    "unpaid_order": "The only payment attempt failed: the order waits for payment (pending) or was cancelled for "
    "it after 7 days. Consistent data.",
    "ticket_contradicts_order": "A ticket says one thing and the records another (units that the order line does "
    "not have; a parcel 'not arrived' that the carrier scanned delivered). full_clean accepts it (a claim is not "
    "a record).",
    "ticket_names_wrong_order": "The customer mistyped the order number (no such order, or another customer's); "
    "the ticket is not linked to an order and the related id is the one meant. full_clean accepts it.",
    "stale_assignment": "An open ticket is assigned to an agent who is on leave (Employee.leave_starts_on/"
    "leave_ends_on). full_clean accepts it; nobody is answering the customer.",
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

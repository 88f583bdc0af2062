"""What commerce knows of an order before it is written (``OrderFacts`` with its lines, payments, shipments and
refunds), the shares and limits it draws with, and a line's warranty end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

from world_app.generator.builds import BuildFacts
from world_app.generator.people import CustomerFacts
from world_app.generator.timeline import add_months
from world_app.models import Product
from world_app.store_rules import REFUND_APPROVAL_LIMIT

ORDERS_AT_SCALE_1 = 800
REFUND_SHARE = 0.11
CANCEL_SHARE = 0.04
RECENT_SHARE = 0.1
APPROVAL_LIMIT_CENTS = int(REFUND_APPROVAL_LIMIT * 100)
TRANSIT_DAYS = {"ground": (2, 5), "two_day": (2, 2), "overnight": (1, 1), "freight": (4, 7)}
PAYMENT_FAILURES = (
    "card declined: insufficient funds",
    "card declined: do not honor",
    "card expired",
    "3-D Secure authentication failed",
    "billing address mismatch (AVS)",
)
_ALNUM = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"


@dataclass(slots=True)
class LineFacts:
    id: str
    product: Product
    quantity: int
    unit_cents: int


@dataclass(slots=True)
class PaymentFacts:
    id: str
    method: str
    status: str
    amount: int
    created_at: datetime
    processed_at: datetime | None
    transaction_id: str
    card_last4: str = ""
    failure_reason: str = ""
    updated_at: datetime | None = None


@dataclass(slots=True)
class ShipmentFacts:
    id: str
    carrier: str
    service: str
    tracking_number: str
    status: str
    label_at: datetime
    shipped_at: datetime | None
    eta: date | None
    delivered_at: datetime | None
    events: list[dict]
    # [(line, quantity)] in this parcel when the order ships in several; empty: the whole order.
    lines: list[tuple[LineFacts, int]] = field(default_factory=list)


@dataclass(slots=True)
class RefundFacts:
    order: OrderFacts
    payment: PaymentFacts
    amount: int
    reason: str
    status: str
    fee: int
    created_at: datetime
    processed_at: datetime | None
    lines: list[tuple[LineFacts, int]]
    notes: str
    id: str = ""
    decided_at: datetime | None = None

    @property
    def counts(self) -> bool:
        """Approved and processed refunds move money; pending ones await the item, rejected ones never do."""
        return self.status in ("approved", "processed")


@dataclass(slots=True)
class OrderFacts:
    id: str
    customer: CustomerFacts
    created_at: datetime
    lines: list[LineFacts]
    build: BuildFacts | None
    address: dict | None = None
    service: str = "ground"
    carrier: str = "ups"
    subtotal: int = 0
    discount: int = 0
    coupon: str = ""
    shipping: int = 0
    tax: int = 0
    total: int = 0
    status: str = "pending"
    payments: list[PaymentFacts] = field(default_factory=list)
    shipment: ShipmentFacts | None = None
    # Further parcels of an order shipped in several (the casebook's split shipments); the first is ``shipment``.
    more_parcels: list[ShipmentFacts] = field(default_factory=list)
    refunds: list[RefundFacts] = field(default_factory=list)
    cancelled_at: datetime | None = None
    notes: str = ""
    mess: list[str] = field(default_factory=list)

    @property
    def payment(self) -> PaymentFacts:
        """The payment that went through (the last one; failed attempts come first)."""
        return self.payments[-1]

    @property
    def parcels(self) -> list[ShipmentFacts]:
        return ([self.shipment] if self.shipment else []) + self.more_parcels

    @property
    def delivered_at(self) -> datetime | None:
        """As the tools read it (``world_app.tools.coverage.delivered_at``): the latest delivered parcel."""
        times = [parcel.delivered_at for parcel in self.parcels if parcel.delivered_at]
        return max(times) if times else None

    @property
    def updated_at(self) -> datetime:
        moments = [self.created_at, self.payment.processed_at, self.cancelled_at]
        for parcel in self.parcels:
            moments += [parcel.label_at, parcel.shipped_at, parcel.delivered_at]
        moments += [r.processed_at or r.created_at for r in self.refunds if r.counts]
        return max(m for m in moments if m is not None)


@dataclass
class Commerce:
    orders: list[OrderFacts]
    refunds: list[RefundFacts]
    scenarios: dict[str, list[str]]


def warranty_end(delivered: datetime, months: int) -> date:
    """The last day of a product's warranty: delivery date + its warranty months."""
    return add_months(delivered.date(), months)

"""Every order of a period with a trait no search filter has: read past the first page at the biggest page size.

Selector: calendar quarters, two-month spans and half-years with more orders than ``MAX_LIMIT`` (so even pages
of 50 leave rows on a later page), crossed with a trait of the order that ``search_orders`` cannot filter on but
shows in every summary: a coupon code, a custom build, a shipping service, a carrier. The sender (marketing, finance,
operations) knows the period and the trait, never an id. The only way to the answer is to list the period's
orders (``created_after`` / ``created_before``, the period's bounds in the world's zone) page by page and keep
the ones with the trait: the count, their ids and the sum of their totals. A period in which no order has the
trait is a real answer too ("none"), and only reading every page shows it; the rubric owes a row only the last
page shows either way.
"""

from __future__ import annotations

from datetime import date, datetime, time
from decimal import Decimal

from world_app import clock
from world_app.models import Order
from world_app.store_rules import COUPONS
from world_app.tools.params import MAX_LIMIT
from world_app.tools.results import local_date, world_today

from .base import (
    MONTHS,
    Family,
    FamilyInstance,
    called,
    criterion,
    dollars,
    judged,
    long_date,
    pick,
    says,
    says_number,
    says_pattern,
    stable_hash,
    tidy,
)

CARRIERS = {"ups": "UPS", "fedex": "FedEx", "usps": "USPS", "dhl": "DHL"}
SERVICES = {"two_day": "two-day", "overnight": "overnight", "freight": "freight"}
SENDERS = (
    ("Priya from marketing", "marketing"),
    ("Tom in finance", "finance"),
    ("Dana (operations lead)", "operations"),
    ("Luis, e-commerce analyst", "analytics"),
    ("Grace from the controller's office", "finance"),
)
ASKS = (
    "{sender} here. For our {purpose} I need every order placed in {period} ({span}) that {trait}: the order "
    "numbers, how many there were, and their combined order total.",
    "Hi! Could you pull all orders from {period} ({span}) that {trait}? I need the count, each order number and the "
    "sum of their totals for the {purpose}. Thanks, {sender}",
    "Quick request from {sender}: how many orders placed during {period} ({span}) {trait}? List their order "
    "numbers and add up what those orders came to. It's for the {purpose}.",
    "For the {purpose}: please go through the orders of {period}, {span}, and find the ones that {trait}. I'd like "
    "the order numbers, the number of orders and their total value. - {sender}",
    "{sender} again. Before the {purpose} meeting I need to know which orders from {period} ({span}) {trait}, with "
    "their order numbers and the total of those orders combined.",
)
TRAITS = (
    [("coupon", code) for code in sorted(COUPONS)]
    + [("build", "custom")]
    + [("service", s) for s in SERVICES]
    + [("carrier", c) for c in CARRIERS]
)
PURPOSES = {
    "coupon": ("coupon performance review", "promotion cost report", "campaign wrap-up"),
    "build": ("custom-build programme review", "workshop capacity plan", "build service report"),
    "service": ("carrier contract renewal", "shipping cost review", "express shipping audit"),
    "carrier": ("carrier scorecard", "carrier contract renewal", "quarterly logistics review"),
}


def _periods(first: date, today: date) -> list[tuple[str, date, date]]:
    """Calendar quarters (the current one up to today), two-month spans and half-years from ``first`` on."""
    periods = []
    for year in range(first.year, today.year + 1):
        for q in range(4):
            start = date(year, 3 * q + 1, 1)
            end = date(year + (q == 3), (3 * q + 3) % 12 + 1, 1)
            if start <= today:
                periods.append((f"Q{q + 1} {year}", start, end))
        for b in range(6):
            start = date(year, 2 * b + 1, 1)
            end = date(year + (b == 5), (2 * b + 2) % 12 + 1, 1)
            if end <= today:
                first_month, second_month = MONTHS[2 * b], MONTHS[2 * b + 1]
                periods.append((f"{first_month} and {second_month} {year}", start, end))
        for h in range(2):
            start = date(year, 6 * h + 1, 1)
            end = date(year + h, (6 * h + 6) % 12 + 1, 1)
            if end <= today:
                periods.append((f"the {'first' if h == 0 else 'second'} half of {year}", start, end))
    return periods


def _bound(day: date) -> str:
    return datetime.combine(day, time(0), tzinfo=clock.world_zone()).isoformat()


class PeriodOrderAuditFamily(Family):
    name = "period_order_audit"
    title = "Orders of a period with a trait no filter has, across pages of 50"
    description = (
        "Count, list and sum a period's orders that used a coupon, a custom build, a service or a carrier: "
        "needs every page at the biggest page size."
    )
    task_type = "information_retrieval"

    def candidates(self):
        rows = list(Order.objects.values_list("id", "created_at"))
        if not rows:
            return
        today = world_today()
        dates = [local_date(created) for _, created in rows]
        for label, start, end in _periods(min(dates), today):
            if sum(1 for d in dates if start <= d < end) <= MAX_LIMIT:
                continue
            for kind, value in TRAITS:
                yield (label, start, end, kind, value)

    def entity_ids(self, candidate) -> tuple[str, ...]:
        _, start, end, kind, value = candidate
        return (start.isoformat(), end.isoformat(), kind, value.lower())  # task keys are lower case

    def build(self, candidate, sim) -> FamilyInstance | None:
        label, start, end, kind, value = candidate
        key = "+".join(self.entity_ids(candidate))
        query = {"created_after": _bound(start), "created_before": _bound(end), "limit": MAX_LIMIT}
        first = sim.run([{"tool": "search_orders", "arguments": query}])[0]
        if "error" in first or not first.get("has_more"):
            return None
        calls = [{"tool": "search_orders", "arguments": query}]
        for offset in range(MAX_LIMIT, first["total"], MAX_LIMIT):
            calls.append({"tool": "search_orders", "arguments": {**query, "offset": offset}})
        pages = sim.run(calls)
        orders = [o for page in pages for o in page.get("items", [])]
        if len(orders) != first["total"] or len({o["id"] for o in orders}) != len(orders):
            return None
        matches = [o for o in orders if _has(o, kind, value)]
        ids = [o["id"] for o in matches]
        total_value = sum((Decimal(o["total"]) for o in matches), Decimal("0"))
        last_day = end.fromordinal(end.toordinal() - 1)
        span = f"{long_date(start)} to {long_date(last_day)}"
        trait = _trait_text(kind, value)
        # One period's questions about different traits never share a phrasing and a sender: with one phrasing for
        # all, two of them would differ in one or two words (near duplicates).
        index = TRAITS.index((kind, value)) + stable_hash(start.isoformat(), end.isoformat()) % len(ASKS)
        sender, _ = SENDERS[(index // len(ASKS)) % len(SENDERS)]
        instruction = tidy(
            ASKS[index % len(ASKS)].format(
                sender=sender, purpose=pick(PURPOSES[kind], key, "purpose"), period=label, span=span, trait=trait
            )
        )
        late_rows = [o["id"] for o in pages[-1].get("items", [])][-2:]
        seen = list(dict.fromkeys(late_rows + ids[:10]))
        saw_last = criterion(
            "tool_call",
            f"The agent saw in search results the period's last orders ({', '.join(late_rows)})"
            + (" and the matching ones." if ids else "."),
            {"expect": "saw", "ids": seen},
            category="completeness",
            required=True,
        )
        searched = called(
            f"Orders were searched by the date they were placed ({start.isoformat()} to {last_day.isoformat()}).",
            "search_orders",
            weight=1,
        )
        iso_span = f"{start.isoformat()} to {last_day.isoformat()}"
        if matches:
            answer = (
                f"I went through all {len(orders)} orders placed from {long_date(start)} to {long_date(last_day)} "
                f"and kept the ones that {trait}.\n"
                f"{len(ids)} order{'s' if len(ids) != 1 else ''} did: {', '.join(ids)}.\n"
                f"Together they come to {dollars(total_value)} in order totals."
            )
            criteria = [
                says_number(
                    f"The reply gives how many orders placed {iso_span} {trait} ({len(ids)}).", len(ids), required=True
                ),
                says(f"The reply lists the matching orders ({', '.join(ids)}), and only those.", ids[0], required=True),
                says_number(
                    f"The reply gives their combined total, {dollars(total_value)}.",
                    total_value,
                    weight=2,
                    required=True,
                ),
                saw_last,
                searched,
                judged(
                    "The reply says which period and which trait it covered, and is easy to scan.", category="format"
                ),
            ]
            branch = "some orders"
        else:
            answer = (
                f"I went through all {len(orders)} orders placed from {long_date(start)} to {long_date(last_day)}: "
                f"none of them {_trait_text(kind, value, negative=True)}, so there are no such orders and their "
                "combined total is $0.00."
            )
            criteria = [
                says_pattern(
                    f"The reply says that no order placed {iso_span} {trait}.",
                    r"\bnone of them\b|\bno (?:such )?orders?\b|\bno order\b",
                    weight=2,
                    required=True,
                ),
                criterion(
                    "response",
                    "The reply names no order of the period as one that did.",
                    {"op": "id_set", "value": [], "id_kind": "ord"},
                    weight=3,
                    category="correctness",
                    required=True,
                ),
                saw_last,
                searched,
                judged("The reply says which period and which trait it covered.", category="format"),
            ]
            branch = "none"
        return self.instance(
            calls=calls,
            answer=answer,
            entity_ids=self.entity_ids(candidate),
            title=f"Orders of {label} that {trait} ({len(ids)} of {len(orders)}, {len(calls)} pages of {MAX_LIMIT})",
            difficulty="medium",
            instruction=instruction,
            criteria=criteria,
            tags=["paging", "aggregation", "date-relation", "family"],
            reviewer_notes=(
                f"search_orders placed {start.isoformat()} <= day < {end.isoformat()} (world zone): {len(orders)} "
                f"orders over {len(calls)} pages of {MAX_LIMIT}; no search filter for {kind} {value}; "
                f"{len(ids)} match, totals {total_value}."
            ),
            branch=branch,
        )


def _has(order: dict, kind: str, value: str) -> bool:
    if kind == "coupon":
        return order.get("discount_code") == value
    if kind == "build":
        return bool(order.get("build_id"))
    if kind == "service":
        return order.get("shipping_service") == value
    return order.get("carrier") == value


def _trait_text(kind: str, value: str, *, negative: bool = False) -> str:
    """What the matching orders did ("used the coupon SAVE25"); ``negative``: the words after "none of them"."""
    if kind == "coupon":
        return f"used the coupon {value}"
    if kind == "build":
        return "was an order of a custom PC build" if negative else "were orders of a custom PC build"
    if kind == "service":
        return f"shipped {SERVICES[value]}"
    return f"went out with {CARRIERS[value]}"

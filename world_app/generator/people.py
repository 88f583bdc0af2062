"""Customers (with their near-duplicate second accounts) and Corecraft's employees."""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from world_app.generator.mess import TIER_CLAIM_NOTES, MessPlan, duplicate_email, duplicate_first_name
from world_app.generator.sink import RowSink
from world_app.generator.timeline import CUSTOMERS_START, Timeline
from world_app.generator.vocabulary import (
    CITIES,
    EMAIL_DOMAINS,
    FIRST_NAMES,
    LAST_NAMES,
    STREET_NAMES,
    STREET_SUFFIXES,
    UNIT_PREFIXES,
)
from world_app.models import Customer, Employee
from world_app.models.people import EMPLOYEE_PERMISSIONS, LOYALTY_DISCOUNT_PCT

CUSTOMERS_AT_SCALE_1 = 600
TIER_WEIGHTS = (("none", 55), ("silver", 25), ("gold", 14), ("platinum", 6))
CORECRAFT_EMAIL_DOMAIN = "corecraft.com"


@dataclass(slots=True)
class CustomerFacts:
    id: str
    first_name: str
    last_name: str
    email: str
    created_at: datetime
    tier: str
    shipping_addresses: list[dict]
    weight: float
    duplicate_of: CustomerFacts | None = None

    @property
    def discount_pct(self) -> int:
        return LOYALTY_DISCOUNT_PCT[self.tier]


@dataclass(slots=True)
class EmployeeFacts:
    id: str
    first_name: str
    last_name: str
    department: str
    title: str
    support_role: str
    hired_on: date
    active_until: date | None  # the last working day of someone who has left


@dataclass
class People:
    customers: list[CustomerFacts]
    employees: list[EmployeeFacts]
    _created: list[datetime] = field(default_factory=list)
    _cumulative: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        total = 0.0
        for customer in self.customers:
            total += customer.weight
            self._created.append(customer.created_at)
            self._cumulative.append(total)

    def pick_customer(self, rng: random.Random, moment: datetime) -> CustomerFacts | None:
        """A customer who had an account at ``moment``, the more active ones more often."""
        known = bisect.bisect_right(self._created, moment)
        if known == 0:
            return None
        index = bisect.bisect_left(self._cumulative, rng.random() * self._cumulative[known - 1])
        return self.customers[min(index, known - 1)]

    def staff(self, *roles: str, on: date) -> list[EmployeeFacts]:
        return [
            e
            for e in self.employees
            if e.support_role in roles and e.hired_on <= on and (e.active_until is None or on <= e.active_until)
        ]


def build_people(*, rng: random.Random, scale: float, timeline: Timeline, sink: RowSink, mess: MessPlan) -> People:
    customers = _customers(rng, scale=scale, timeline=timeline, mess=mess)
    for _facts, row in customers:
        sink.add(row)
    employees = _employees(rng, scale=scale, timeline=timeline, sink=sink)
    return People(customers=[facts for facts, _ in customers], employees=employees)


def _address(rng: random.Random, *, label: str, name: str, city_row=None) -> dict:
    city, state, zip3, _area = city_row or rng.choice(CITIES)
    line2 = f"{rng.choice(UNIT_PREFIXES)} {rng.randint(1, 40)}{rng.choice('ABCD') if rng.random() < 0.3 else ''}"
    address = {
        "label": label,
        "name": name,
        "line1": f"{rng.randint(10, 9899)} {rng.choice(STREET_NAMES)} {rng.choice(STREET_SUFFIXES)}",
        "line2": line2 if rng.random() < 0.25 else "",
        "city": city,
        "state": state,
        "postal_code": f"{zip3}{rng.randint(1, 99):02d}",
        "country": "US",
    }
    return address


def _email(rng: random.Random, first: str, last: str) -> str:
    first, last = first.lower(), last.lower()
    pattern = rng.randrange(6)
    local = (
        f"{first}.{last}",
        f"{first}{last}",
        f"{first[0]}{last}",
        f"{first}_{last}{rng.randint(1, 99)}",
        f"{first}{last[0]}{rng.randint(70, 99)}",
        f"{last}.{first}",
    )[pattern]
    return f"{local}@{rng.choice(EMAIL_DOMAINS)}"


def _tier(rng: random.Random) -> str:
    roll = rng.randrange(100)
    for tier, weight in TIER_WEIGHTS:
        if roll < weight:
            return tier
        roll -= weight
    return "none"


_BENIGN_NOTES = (
    "Prefers email over phone.",
    "Business account: send invoices to accounts payable.",
    "Hard of hearing: use chat or email.",
    "Asked not to receive marketing calls.",
    "Builds PCs for a local school club.",
)


def _customers(rng: random.Random, *, scale: float, timeline: Timeline, mess: MessPlan):
    count = max(10, round(CUSTOMERS_AT_SCALE_1 * scale))
    start = timeline.at(CUSTOMERS_START, 8)
    latest = timeline.now - timedelta(days=1)
    people = []
    for _ in range(count):
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        created = timeline.between(rng, start, latest)
        city_row = rng.choice(CITIES)
        name = f"{first} {last}"
        addresses = [_address(rng, label="shipping", name=name, city_row=city_row)]
        if rng.random() < 0.08:
            addresses.append(_address(rng, label="shipping", name=name, city_row=rng.choice(CITIES)))
        if rng.random() < 0.3:
            addresses.append(_address(rng, label="billing", name=name, city_row=city_row))
        dob = None
        if rng.random() < 0.85:
            dob = date(1950, 1, 1) + timedelta(days=rng.randint(0, 365 * 56))
        people.append(
            {
                "first_name": first,
                "last_name": last,
                "email": _email(rng, first, last),
                "phone": f"+1-{city_row[3]}-555-{rng.randint(100, 9999):04d}" if rng.random() < 0.9 else "",
                "date_of_birth": dob,
                "addresses": addresses,
                "loyalty_tier": _tier(rng),
                "marketing_opt_in": rng.random() < 0.4,
                "notes": rng.choice(_BENIGN_NOTES) if rng.random() < 0.04 else "",
                "created_at": created,
                "weight": min(25.0, rng.paretovariate(1.4)),
                "duplicate_of": None,
            }
        )
    # Near-duplicates: the same person signing up again later, with a nickname or another email.
    for original in mess.pick(people, mess.share(count)):
        first = duplicate_first_name(mess.rng, original["first_name"])
        addresses = [dict(a, name=f"{first} {original['last_name']}") for a in original["addresses"][:1]]
        people.append(
            dict(
                original,
                first_name=first,
                email=duplicate_email(mess.rng, original["email"], first_name=first, last_name=original["last_name"]),
                addresses=addresses,
                loyalty_tier="none",
                marketing_opt_in=False,
                notes="",
                created_at=timeline.between(mess.rng, original["created_at"], latest),
                weight=0.6,
                duplicate_of=original,
            )
        )
    # Account numbers follow sign-up order, as an auto-increment would.
    people.sort(key=lambda p: p["created_at"])
    facts_by_key: dict[int, CustomerFacts] = {}
    out = []
    for number, person in enumerate(people, start=1):
        person["id"] = f"cus-{number:05d}"
    claim_candidates = [
        p for p in people if p["loyalty_tier"] != "platinum" and not p["notes"] and not p["duplicate_of"]
    ]
    for person in mess.pick(claim_candidates, mess.handful()):
        claimed = {"none": "gold", "silver": "platinum", "gold": "platinum"}[person["loyalty_tier"]]
        template = mess.rng.choice(TIER_CLAIM_NOTES)
        person["notes"] = template.format(claimed=claimed, claimed_title=claimed.title())
        person["claimed_tier"] = claimed
    for person in people:
        duplicate_of = person["duplicate_of"]
        facts = CustomerFacts(
            id=person["id"],
            first_name=person["first_name"],
            last_name=person["last_name"],
            email=person["email"],
            created_at=person["created_at"],
            tier=person["loyalty_tier"],
            shipping_addresses=[a for a in person["addresses"] if a["label"] == "shipping"],
            weight=person["weight"],
            duplicate_of=facts_by_key[id(duplicate_of)] if duplicate_of else None,
        )
        facts_by_key[id(person)] = facts
        if duplicate_of:
            mess.record(
                "duplicate_customer",
                facts.id,
                related=(duplicate_of["id"],),
                note=f"second account of {duplicate_of['id']}",
            )
        if "claimed_tier" in person:
            mess.record(
                "tier_claim_mismatch",
                facts.id,
                note=f"notes claim {person['claimed_tier']}; loyalty_tier is {person['loyalty_tier']}",
            )
        row = Customer(
            id=person["id"],
            first_name=person["first_name"],
            last_name=person["last_name"],
            email=person["email"],
            phone=person["phone"],
            date_of_birth=person["date_of_birth"],
            addresses=person["addresses"],
            loyalty_tier=person["loyalty_tier"],
            marketing_opt_in=person["marketing_opt_in"],
            notes=person["notes"],
            created_at=person["created_at"],
            updated_at=person["created_at"],
        )
        out.append((facts, row))
    return out


# (department, title, support role, count at scale 1, grows with scale, reports to (title) or None)
_EMPLOYEE_PLAN = (
    ("operations", "Chief Operating Officer", "none", 1, False, None),
    ("support", "Head of Customer Support", "manager", 1, False, "Chief Operating Officer"),
    ("support", "Support Team Lead", "team_lead", 3, True, "Head of Customer Support"),
    ("support", "Senior Support Agent", "senior_agent", 6, True, "Support Team Lead"),
    ("support", "Support Agent", "agent", 12, True, "Support Team Lead"),
    ("product_management", "Director of Product", "none", 1, False, "Chief Operating Officer"),
    ("product_management", "Product Specialist", "product_specialist", 4, True, "Director of Product"),
    ("engineering", "Engineering Manager", "none", 1, False, "Chief Operating Officer"),
    ("engineering", "Technical Specialist", "technical_specialist", 4, True, "Engineering Manager"),
    ("engineering", "Software Engineer", "none", 2, True, "Engineering Manager"),
    ("help_desk", "Help Desk Lead", "team_lead", 1, False, "Head of Customer Support"),
    ("help_desk", "Help Desk Agent", "agent", 4, True, "Help Desk Lead"),
    ("order_processing", "Order Processing Manager", "none", 1, False, "Chief Operating Officer"),
    ("order_processing", "Order Processing Specialist", "none", 5, True, "Order Processing Manager"),
    ("operations", "Warehouse Lead", "none", 1, False, "Chief Operating Officer"),
    ("operations", "Logistics Coordinator", "none", 3, True, "Warehouse Lead"),
    ("finance", "Finance Controller", "none", 1, False, "Chief Operating Officer"),
    ("finance", "Billing Specialist", "none", 2, True, "Finance Controller"),
    ("it_systems", "IT Systems Manager", "none", 1, False, "Chief Operating Officer"),
    ("it_systems", "Systems Administrator", "none", 2, True, "IT Systems Manager"),
    ("hr", "HR Manager", "none", 1, False, "Chief Operating Officer"),
    ("hr", "HR Generalist", "none", 1, True, "HR Manager"),
    ("recruitment", "Recruiter", "none", 2, True, "HR Manager"),
)

_PERMISSIONS_BY_ROLE = {
    "manager": EMPLOYEE_PERMISSIONS,
    "team_lead": tuple(p for p in EMPLOYEE_PERMISSIONS if p != "manage_inventory"),  # all but the stock
    "senior_agent": ("view_orders", "edit_orders", "issue_refunds", "manage_tickets", "manage_builds"),
    "agent": ("view_orders", "issue_refunds", "manage_tickets"),
    "product_specialist": ("view_orders", "manage_tickets", "manage_inventory", "manage_builds"),
    "technical_specialist": ("view_orders", "manage_tickets", "manage_builds"),
}
_PERMISSIONS_BY_TITLE = {
    "Chief Operating Officer": ("view_orders", "approve_refunds_over_limit", "approve_policy_exceptions"),
    "Finance Controller": ("view_orders", "issue_refunds", "approve_refunds_over_limit", "approve_policy_exceptions"),
    "Billing Specialist": ("view_orders", "issue_refunds"),
    "Order Processing Manager": ("view_orders", "edit_orders", "manage_inventory"),
    "Order Processing Specialist": ("view_orders", "edit_orders"),
    "Warehouse Lead": ("view_orders", "manage_inventory"),
    "Logistics Coordinator": ("view_orders", "manage_inventory"),
    "Director of Product": ("view_orders", "manage_inventory", "manage_builds"),
}


def _employees(rng: random.Random, *, scale: float, timeline: Timeline, sink: RowSink) -> list[EmployeeFacts]:
    growth = math.sqrt(scale)
    facts: list[EmployeeFacts] = []
    rows: list[Employee] = []
    by_title: dict[str, list[Employee]] = {}
    emails: set[str] = set()
    for department, title, role, base, grows, reports_to in _EMPLOYEE_PLAN:
        count = max(1, round(base * growth)) if grows else base
        for index in range(count):
            first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
            local = f"{first}.{last}".lower()
            email, suffix = f"{local}@{CORECRAFT_EMAIL_DOMAIN}", 2
            while email in emails:
                email, suffix = f"{local}{suffix}@{CORECRAFT_EMAIL_DOMAIN}", suffix + 1
            emails.add(email)
            senior = not grows
            hired = date(2016 if senior else 2017, 1, 1) + timedelta(days=rng.randint(0, 900 if senior else 3000))
            hired = min(hired, timeline.today - timedelta(days=30))
            # A few agents have left: their old tickets still name them.
            left = None
            if role == "agent" and index > 0 and rng.random() < 0.08 and hired < date(2023, 6, 1):
                left = date(2024, 1, 1) + timedelta(days=rng.randint(0, 500))
            managers = by_title.get(reports_to or "", [])
            manager = managers[index % len(managers)] if managers else None
            number = len(rows) + 1
            permissions = _PERMISSIONS_BY_ROLE.get(role) or _PERMISSIONS_BY_TITLE.get(title, ())
            row = Employee(
                id=f"emp-{number:04d}",
                first_name=first,
                last_name=last,
                email=email,
                department=department,
                title=title,
                manager=manager,
                permissions=[p for p in EMPLOYEE_PERMISSIONS if p in permissions],
                support_role=role,
                hired_on=hired,
                is_active=left is None,
                created_at=timeline.at(hired, 9),
                updated_at=timeline.at(left, 17) if left else timeline.at(hired, 9),
            )
            rows.append(row)
            by_title.setdefault(title, []).append(row)
            facts.append(EmployeeFacts(row.id, first, last, department, title, role, hired, left))
    for row in rows:
        sink.add(row)
    return facts

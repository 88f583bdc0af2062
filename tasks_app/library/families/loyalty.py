"""A price quote with the loyalty discount, where the tier the customer claims may not be the one on file.

Selector: customers with a unique email, each with one active, in-stock product (by hash), a quantity and a
shipping service. The customer names a tier: their own, or (for about half) a higher one. Policy
(``LOYALTY_DISCOUNT_PCT``): the tier on file gives its percent off merchandise, never off shipping; the quote
is what ``calculate_price`` computes for the customer.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

from world_app.models import Customer, Product
from world_app.store_rules import LOYALTY_DISCOUNT_PCT

from .base import (
    Family,
    FamilyInstance,
    called,
    dollars,
    pick,
    reply_tone,
    says_number,
    says_pattern,
    stable_hash,
    tidy,
)

TIERS = ("none", "silver", "gold", "platinum")
SERVICES = ("ground", "two_day", "overnight")
SERVICE_WORDS = {"ground": "ground shipping", "two_day": "two-day shipping", "overnight": "overnight shipping"}
MESSAGES = (
    "Hi, I'm {name} ({email}). As a {claimed} member I get {pct}% off, right? What would {qty} {product} cost me "
    "with {service}?",
    "Hello, this is {name}, email {email}. Could you quote {qty} {product} with {service}? I'm on the {claimed} "
    "tier, so please include my {pct}% loyalty discount.",
    "{name} here ({email}). I'd like a total for {qty} {product}, {service}. My account is {claimed} tier "
    "({pct}% off), so what's the final price?",
    "Quick price check please: {qty} {product} with {service}. Account email {email}; I believe I'm a "
    "{claimed} customer with {pct}% off. Thanks, {name}",
)


class LoyaltyQuoteFamily(Family):
    name = "loyalty_quote"
    title = "Price quote with the loyalty discount (and a tier claim that may not match)"
    description = "Find the customer, price the basket with their real tier, and correct a wrong tier claim."
    task_type = "reasoning"

    def candidates(self):
        customers = list(Customer.objects.order_by("id"))
        emails = Counter(c.email.casefold() for c in customers)
        self._products = list(Product.objects.filter(lifecycle="active", stock_quantity__gt=2).order_by("id"))
        for customer in customers:
            if emails[customer.email.casefold()] == 1 and customer.email:
                yield customer

    def build(self, customer, sim) -> FamilyInstance | None:
        key = customer.id
        product = pick(self._products, key, "product")
        quantity = 1 + stable_hash(key, "qty") % 2
        # Half the baskets hold a second product: more to add up, and fewer look-alike requests.
        extra = pick(self._products, key, "extra") if stable_hash(key, "basket") % 2 else None
        if extra is not None and extra.id == product.id:
            extra = None
        service = pick(SERVICES, key, "service")
        actual = customer.loyalty_tier
        higher = [t for t in TIERS if TIERS.index(t) > TIERS.index(actual)]
        mismatch = bool(higher) and stable_hash(key, "claim") % 2 == 0
        claimed = pick(higher, key, "claimed") if mismatch else actual
        if claimed == "none":
            return None  # nobody claims "no tier"; a none customer always claims one (mismatch)
        name = f"{customer.first_name} {customer.last_name}"
        instruction = tidy(
            pick(MESSAGES, key, "message").format(
                name=name,
                email=customer.email,
                claimed=claimed.title(),
                pct=LOYALTY_DISCOUNT_PCT[claimed],
                qty=quantity,
                product=product.name + (f" and 1 {extra.name}" if extra else ""),
                service=SERVICE_WORDS[service],
            )
        )
        find = {"tool": "search_customers", "arguments": {"email": customer.email}}
        quote = {
            "tool": "calculate_price",
            "arguments": {
                "mode": "quote",
                "items": [{"product_id": product.id, "quantity": quantity}]
                + ([{"product_id": extra.id, "quantity": 1}] if extra else []),
                "customer_id": customer.id,
                "shipping_service": service,
            },
        }
        found, priced = sim.run([find, quote])
        if "error" in priced or found.get("total") != 1:
            return None
        total = Decimal(priced["total"])
        discount = Decimal(priced["discount_total"])
        shipping = Decimal(priced["shipping"]["amount"])
        pct = LOYALTY_DISCOUNT_PCT[actual]
        if mismatch and actual == "none":
            tier_sentence = f"I checked your account, and it has no loyalty tier yet (not {claimed})."
        elif mismatch:
            tier_sentence = (
                f"I checked your account, and it is on the {actual} tier rather than {claimed}, which gives "
                f"{pct}% off merchandise."
            )
        else:
            tier_sentence = f"Your account is indeed {actual} tier, which gives {pct}% off merchandise."
        discount_sentence = (
            f"The loyalty discount on the merchandise ({dollars(priced['merchandise_subtotal'])}) comes to "
            f"{dollars(discount)}."
            if discount
            else "There is no loyalty discount on this order."
        )
        answer = (
            f"Hi {customer.first_name}, thanks for asking. {tier_sentence}\n"
            f"{discount_sentence}\n"
            f"{SERVICE_WORDS[service].capitalize()} adds {dollars(shipping)} (discounts never apply to shipping), "
            f"for a total of {dollars(total)}.\n"
            "Let me know if you'd like me to help place the order."
        )
        criteria = [
            called(
                f"The quote was priced for the customer's own account ({customer.id}).",
                "calculate_price",
                {"customer_id": customer.id},
                weight=2,
                category="correctness",
                required=True,
            ),
            says_number(f"The reply gives the total of {dollars(total)}.", total, required=True),
            called("The customer was found by their email.", "search_customers", {"email": customer.email}, weight=1),
            (
                says_number(f"The reply gives the discount of {dollars(discount)}.", discount, weight=1)
                if discount
                else says_pattern("The reply says no loyalty discount applies.", r"no loyalty discount", weight=1)
            ),
            reply_tone(customer.first_name),
        ]
        if mismatch:
            criteria.insert(
                2,
                says_pattern(
                    f"The reply corrects the tier: the account is {actual}, not {claimed}.",
                    r"no loyalty tier" if actual == "none" else rf"\b{actual}\b",
                    weight=2,
                    required=True,
                ),
            )
        return self.instance(
            calls=[find, quote],
            answer=answer,
            branch="mismatch" if mismatch else "matches",
            entity_ids=(customer.id, product.id, *([extra.id] if extra else [])),
            title=f"Quote {product.name} for a {claimed}-tier claim ({'mismatch' if mismatch else 'matches'})",
            difficulty="hard" if mismatch else "easy",
            instruction=instruction,
            criteria=criteria,
            tags=["loyalty", "pricing", "family", "tier-mismatch" if mismatch else "tier-matches"],
            reviewer_notes=f"Tier on file: {actual} ({pct}%); claimed: {claimed}. Quote total {priced['total']}.",
        )

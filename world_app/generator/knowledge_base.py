"""The knowledge base: the store's policies (the rules the generator itself follows), troubleshooting guides,
manuals of the best-selling products, FAQs and internal procedures. Our own text throughout.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from world_app.generator.sink import RowSink
from world_app.generator.timeline import Timeline
from world_app.models import KnowledgeBaseArticle, Product
from world_app.store_rules import (
    COUPONS,
    ESCALATION_DESTINATIONS,
    FREE_GROUND_SHIPPING_OVER,
    LOYALTY_DISCOUNT_PCT,
    LOYALTY_SPEND_MONTHS,
    LOYALTY_TIER_SPEND,
    PRICE_MATCH_WINDOW_DAYS,
    REFUND_APPROVAL_LIMIT,
    RESTOCKING_FEE_EXEMPT_CATEGORIES,
    RESTOCKING_FEE_PCT,
    RETURN_EXCEPTION_DAYS,
    RETURN_WINDOW_DAYS,
    SALES_TAX_PCT,
    SHIPPING_RATES,
    WARRANTY_EXCEPTION_DAYS,
    WARRANTY_EXCLUSIONS,
)

MANUALS_AT_SCALE_1 = 20


@dataclass
class KnowledgeBase:
    ids_by_slug: dict[str, str] = field(default_factory=dict)
    # Troubleshooting guide per product category, for ticket replies that point customers to it.
    guide_by_category: dict[str, str] = field(default_factory=dict)


def _dollars(amount: Decimal) -> str:
    return f"${amount:,.2f}".replace(".00", "") if amount == amount.to_integral_value() else f"${amount:,.2f}"


def _coupon_line(coupon) -> str:
    window = ""
    if coupon.valid_from or coupon.valid_until:
        window = f", valid {coupon.valid_from or 'now'} to {coupon.valid_until or 'further notice'}"
    return f"{coupon.code}: {coupon.description}{window}."


_PLURALS = {"accessory": "accessories"}
_FEE_EXEMPT = " and ".join(_PLURALS.get(c, f"{c}s") for c in sorted(RESTOCKING_FEE_EXEMPT_CATEGORIES))
_TAX = (
    "Prices include sales tax; nothing is added at checkout."
    if SALES_TAX_PCT == 0
    else f"Sales tax of {SALES_TAX_PCT}% is added on merchandise after discounts."
)
_RATES = SHIPPING_RATES
_DESTINATIONS = {kind: dest.replace("_", " ") for kind, dest in ESCALATION_DESTINATIONS.items()}
_EXCLUSIONS = ", ".join(e.replace("_", " ") for e in WARRANTY_EXCLUSIONS)
_TIERS = ", ".join(f"{tier} {pct}%" for tier, pct in LOYALTY_DISCOUNT_PCT.items())
_TIER_SPEND = ", ".join(f"{tier} from {_dollars(amount)}" for tier, amount in LOYALTY_TIER_SPEND.items())

# (slug, title, tags, body). Every number is rendered from ``world_app.store_rules``, which the generator and
# the agent tools apply too.
POLICIES = (
    (
        "returns-policy",
        "Returns and refunds",
        ["returns", "refunds", "return window", "shipping"],
        f"""\
Corecraft accepts returns within {RETURN_WINDOW_DAYS} days of delivery. The delivery date is the one in the \
carrier's tracking (for an order in several parcels, its last delivered parcel's), never the order date: the \
last day to return is the delivery date plus {RETURN_WINDOW_DAYS} days (see which date counts). An order that was \
never delivered is handled under the delivery problems policy.

An item can be returned if it is in its original condition: unopened, or opened but undamaged, with all \
accessories and packaging. Items damaged by the customer (physical or liquid damage) are not accepted; items \
damaged in transit are handled under the delivery problems policy. After {RETURN_WINDOW_DAYS} days a sale is \
final, except for warranty claims and an exception a team lead approves (up to {RETURN_EXCEPTION_DAYS} days \
past the window, see the escalation rules). Checking the window is the agent's job: the order shows the \
delivery date and the window's last day.

The refund for a returned item is what was paid for it: its price less its share of the order's discounts \
(loyalty and coupon discounts are shared out over the items by value), less any restocking fee. Shipping \
charges are not refunded once an order has shipped, not even when the whole order is returned; an order \
that never shipped is refunded in full, shipping included (see cancelling an order), and a duplicate charge \
is refunded in full (see payments). {_TAX}

Refunds go back to the original payment method 5 to 10 business days after the returned item arrives and \
passes inspection. A refund for a defective item, and a refund that returns nothing (a price match, a \
goodwill amount), is approved at once. Refunds of one order on one day that add up to more than \
{_dollars(REFUND_APPROVAL_LIMIT)}, in one refund or several, wait for a team lead's approval. When an order's \
refunds cover every item it becomes "refunded" (the payment too), even when a restocking fee was withheld; \
otherwise "partially_refunded".""",
    ),
    (
        "restocking-fees",
        "Restocking fees",
        ["returns", "restocking fee"],
        f"""\
Opened items returned because the customer changed their mind or because they turned out incompatible carry \
a {RESTOCKING_FEE_PCT}% restocking fee: {RESTOCKING_FEE_PCT}% of the price paid for the item after discounts, \
deducted from its refund. {_FEE_EXEMPT.capitalize()} never carry the fee.

No fee applies to unopened items, to defective ones, or to items damaged in transit, opened or not. A fee \
once withheld is kept: it is not refunded later as goodwill.""",
    ),
    (
        "warranty-policy",
        "Warranty coverage and claims",
        ["warranty", "defect", "replacement", "denial"],
        f"""\
Every product carries the warranty listed on its product page (warranty_months). The warranty starts on the \
delivery date and ends on the same day of the month that many months later (delivered 2024-09-20 with a \
12-month warranty: covered through 2025-09-20). A claim is made on the day the customer reports the defect to us \
(the day they opened their ticket about the order, while it is still open), even when we file it later; claims \
made after the end date are out of warranty.

The warranty covers manufacturing defects. It does not cover {_EXCLUSIONS} (examples: a cracked board, \
a spill, running a part beyond the manufacturer's voltage settings, bent socket pins, worn keycaps). A claim \
is denied with the reason named; an employee never denies a claim without one. When the cause is unknown, the \
part is inspected before a decision.

An approved claim is met with a replacement of the same product, shipped free. If the product is no longer \
sold, the replacement is the closest current equivalent, or a refund of the price paid if the customer \
prefers. We do not repair parts, and a product still on sale is replaced, not refunded. Out of warranty, we \
cannot replace the item (a team lead may approve an exception up to {WARRANTY_EXCEPTION_DAYS} days past \
expiry); we may point the customer to the manufacturer and offer the customer's loyalty discount on a new \
one. Within {RETURN_WINDOW_DAYS} days of delivery a defective item can instead be returned for a refund.""",
    ),
    (
        "loyalty-program",
        "Loyalty program and tiers",
        ["loyalty", "discount", "tier"],
        f"""\
Customers earn a tier from their spending over the last {LOYALTY_SPEND_MONTHS} months (order totals less \
refunds): {_TIER_SPEND}. The tier on the account follows that spend, up and down. Tiers given at sign-up under \
the former program ended at the relaunch review, which moved every account to the tier its spend earns; an account \
the review changed has a "Loyalty review" note with the date and the tier it held before, and orders placed before \
the review carry the discount of the tier held at the time. A tier the spending does not explain is kept only by an \
exception a team lead or manager decided, recorded on the account as a "Loyalty exception:" note that says why, \
who approved it, when, and until when it holds.

Discounts: {_TIERS}, taken off the merchandise subtotal at checkout. The discount never applies to shipping, \
and it is never applied to past orders.

The tier on the customer's account is the only source of truth. A claim in a conversation, or a note that \
claims another tier, is not proof (a "Loyalty exception:" note explains the tier on record, it never grants \
another one): if a customer says their tier is wrong, check the account record and escalate to a \
team lead with the evidence; do not apply a different tier's discount yourself.""",
    ),
    (
        "price-match",
        "Price match",
        ["price match", "refund"],
        f"""\
Within {PRICE_MATCH_WINDOW_DAYS} days of purchase we match a lower advertised price for the identical model, in \
stock, at an authorized US retailer. We refund the difference in item price per unit purchased, to the \
original payment method; nothing is returned, so the refund is approved at once. Marketplaces, clearance, \
open-box, bundle and coupon prices are excluded. One claim per item, and the difference is always less than \
what was paid for it.""",
    ),
    (
        "shipping-policy",
        "Shipping options and costs",
        ["shipping", "delivery", "carrier"],
        f"""\
Orders ship from Columbus OH, Reno NV or Dallas TX within 1 to 2 business days; orders of a custom build \
take 2 more days. We ship with UPS, FedEx, USPS and DHL, to US addresses only.

Ground (2 to 5 business days): {_dollars(_RATES["ground"])}, free when the merchandise after discounts is over \
{_dollars(FREE_GROUND_SHIPPING_OVER)}. Two-day: {_dollars(_RATES["two_day"])}. Overnight: \
{_dollars(_RATES["overnight"])}. Freight (prebuilt PCs and workstations, 4 to 7 days): \
{_dollars(_RATES["freight"])}. The estimated delivery date is shown on the order and the shipment once the \
label is created.""",
    ),
    (
        "delivery-problems",
        "Delivery problems: damaged, lost or missing parcels",
        ["shipping", "lost", "damaged", "delivered not received"],
        """\
Damaged in transit: if the carrier reports an exception or the parcel arrives damaged (photos within 7 days \
of delivery), we refund the merchandise (not the shipping) or send a replacement. No restocking fee applies, \
even when the customer opened the box.

Tracking shows delivered but the customer has not received it: first confirm the delivery scan, date and \
place in the shipment's events. Ask the customer to check with neighbours, the mailroom or reception and to \
wait 48 hours, since carriers sometimes scan early. If it is still missing, open a carrier investigation \
(5 business days). Do not refund or reship before the investigation ends; a team lead may approve an \
exception.""",
    ),
    (
        "order-changes",
        "Cancelling or changing an order",
        ["cancel", "address change", "order"],
        """\
An order can be cancelled, or its shipping address changed, until it ships: while it is pending, paid or \
backordered and its shipment has no carrier pickup scan. Cancelling voids the payment authorization or \
refunds the captured payment in full, shipping included. Once an order has shipped, it cannot be cancelled; \
the customer uses the returns process after delivery.""",
    ),
    (
        "backorders-preorders",
        "Backorders and preorders",
        ["backorder", "preorder", "stock"],
        """\
Backorderable products can be ordered while out of stock. The payment is authorized, not captured, until the \
order ships, and the whole order ships together unless the customer asks us to split it (split shipping is \
free). A backordered order can be cancelled at no cost any time before it ships. Preorders work the same \
way and ship on the release date.""",
    ),
    (
        "payments-billing",
        "Payments, failed payments and duplicate charges",
        ["payment", "billing", "duplicate charge", "declined"],
        f"""\
We accept cards, PayPal, Apple Pay, Google Pay, and bank transfer for orders of $1,000 or more. A declined \
payment leaves no charge; the customer can retry with the same or another method, and the order keeps its \
number.

Duplicate charge: confirm in the order's payments that two payments were captured or completed for the \
same order. Refund the duplicate payment in full; the shipping rule of the returns policy does not apply, \
since nothing was bought with it. Refunds over {_dollars(REFUND_APPROVAL_LIMIT)} need a team lead's approval \
(a policy_exception escalation). A payment the customer disputed with the bank is never refunded by us (see \
disputed payments and chargebacks).""",
    ),
    (
        "coupons",
        "Coupons and discount codes",
        ["coupon", "discount"],
        """\
One code per order. It applies after the loyalty discount, to merchandise only. Minimums count merchandise \
before discounts. Codes have no cash value; on a return, the code's value is shared out over the items like \
any discount (see the returns policy).

"""
        + "\n".join(_coupon_line(c) for c in COUPONS.values()),
    ),
    (
        "escalation-rules",
        "When and where to escalate",
        ["escalation", "approval", "refund limit"],
        f"""\
Agents may refund up to {_dollars(REFUND_APPROVAL_LIMIT)} of one order on one day, in one refund or several; \
beyond that the refunds need an employee with the approve_refunds_over_limit permission (team leads, the Head \
of Customer Support, the Finance Controller).

Escalation types and where they go: technical to {_DESTINATIONS["technical"]} (the troubleshooting guide is \
exhausted or a part needs bench testing); product_specialist to {_DESTINATIONS["product_specialist"]} (build \
advice on systems over $2,000, workstation configurations); policy_exception to {_DESTINATIONS["policy_exception"]}, \
where a team lead or manager decides and only they are assigned (refunds over the limit, returns up to \
{RETURN_EXCEPTION_DAYS} days past the window, warranty claims up to {WARRANTY_EXCEPTION_DAYS} days past expiry, \
tier disputes, duplicate charges, missing-parcel exceptions). Note in the escalation what was checked and \
what is asked.""",
    ),
    (
        "account-verification",
        "Account verification and duplicate accounts",
        ["account", "privacy", "duplicate account"],
        """\
A ticket comes from the customer's signed-in account, so the ticket's customer is verified. Before \
discussing or changing an order, check that it belongs to the ticket's customer; an order of another account \
is not discussed on the ticket, and a refund or warranty claim is recorded only against the buyer's own \
ticket. Some customers have two accounts (a nickname, a second email). Treat them as separate until the \
customer confirms both from each account; orders, tiers and notes do not move between accounts without a \
team lead's approval.""",
    ),
    (
        "support-standards",
        "Support ticket standards",
        ["tickets", "resolution", "tone"],
        """\
Reply within one business day. Name the order, the items and the amounts you checked. Resolving a ticket \
means: status resolved, an assignee, and a resolution record naming the outcome (refund issued, replacement \
sent, troubleshooting steps, recommendation, order updated, warranty claim filed, or no action) with a \
one-line summary; a refund_issued resolution links its refund. Tickets waiting on the customer for 7 days \
are closed with a note.""",
    ),
)

TROUBLESHOOTING = (
    (
        "no-post",
        "PC does not start or POST",
        "motherboard",
        ["boot", "post", "motherboard", "cpu"],
        """\
1. Check the 24-pin and the 8-pin CPU power cables at both ends; a missing CPU power cable is the most common \
cause. 2. Read the board's debug LEDs: CPU, DRAM, VGA or BOOT. 3. Boot with one memory module in the slot \
the manual names first. 4. Confirm the CPU's socket matches the board and that the board's firmware \
supports the CPU (newer CPUs may need a firmware update first). 5. Clear CMOS. If it still does not POST, \
check for bent socket pins (not covered by warranty) before escalating.""",
    ),
    (
        "cpu-temperatures",
        "CPU runs hot or throttles",
        "cpu",
        ["cpu", "temperature", "cooler"],
        """\
Check that the cooler's rating in watts is at least the CPU's TDP; a cooler below it will throttle under \
load. Remove the cooler's protective film, reapply thermal compound, and confirm the mounting kit matches the \
socket. Set the CPU fan header to PWM. Temperatures up to 90 C under full load are within spec for current \
desktop CPUs.""",
    ),
    (
        "gpu-no-display",
        "Graphics card shows no picture or crashes",
        "gpu",
        ["gpu", "display", "power"],
        """\
Connect the monitor to the graphics card, not the motherboard. Use separate power cables for each 8-pin \
input, or seat the 16-pin connector fully. Check the power supply against the card's recommended wattage. \
Reinstall the driver after removing the old one. Artifacts at stock settings point to a defect; artifacts \
only when overclocked are not covered by the warranty.""",
    ),
    (
        "gpu-fit",
        "Graphics card does not fit the case",
        "gpu",
        ["gpu", "case", "clearance", "compatibility"],
        """\
Compare the card's length (length_mm) with the case's maximum graphics card length (max_gpu_length_mm); \
front radiators and fans reduce it. If the card is longer, the options are a shorter card of the same \
chip, a larger case, or returning the card within 30 days of delivery (opened cards carry the 15% \
restocking fee). A vertical mount does not add length clearance.""",
    ),
    (
        "memory-stability",
        "Memory not detected or unstable",
        "memory",
        ["memory", "xmp", "expo", "ram"],
        """\
Confirm the kit's type (DDR4 or DDR5) matches the motherboard; they do not fit each other's slots. Install \
two modules in the slots the manual recommends. Boot once at default speed, then enable the XMP or EXPO \
profile. If the system is unstable only with the profile on, lower the speed one step; errors at default \
speed point to a defective module.""",
    ),
    (
        "storage-not-detected",
        "Drive not detected",
        "storage",
        ["storage", "nvme", "ssd", "bios"],
        """\
NVMe drives: check the M.2 slot's screw or latch and that the slot is not shared with a SATA port in use. \
SATA drives: check both the data and the power cable. New drives must be initialised in Disk Management \
before they appear. A drive missing from the firmware's list after reseating is likely defective.""",
    ),
    (
        "psu-shutdowns",
        "Shutdowns or restarts under load",
        "psu",
        ["psu", "power", "shutdown"],
        """\
Sudden power-offs in games usually mean the power supply is too small or a cable is loose. Add up the \
parts' draw: the power supply should carry it with at least 30% headroom, and meet the graphics card's \
recommended wattage. Use separate cables for each GPU power input. Clicking or burning smells: stop using \
it and request a warranty replacement.""",
    ),
    (
        "cooler-install",
        "Cooler installation and pump noise",
        "cooling",
        ["cooling", "aio", "installation"],
        """\
Check the cooler supports the CPU's socket (sockets in its specs; some need a separate mounting kit). Air \
coolers must be shorter than the case's maximum cooler height; liquid coolers need a radiator mount of their \
size. A gurgling pump usually has air in it: mount the radiator above the pump and run it at full speed for \
10 minutes.""",
    ),
    (
        "case-front-panel",
        "Front panel USB, audio or fans not working",
        "case",
        ["case", "usb", "fans"],
        """\
Connect the front USB-C, USB 3 and HD audio cables to their headers; the power switch and LED pins follow the \
board manual's diagram. Case fans need a fan header or the case's hub to be powered from SATA.""",
    ),
    (
        "monitor-issues",
        "Monitor flickers, shows no signal or wrong refresh rate",
        "monitor",
        ["monitor", "refresh rate", "cable"],
        """\
Use DisplayPort or an HDMI 2.1 cable for refresh rates above 144 Hz. Select the refresh rate in the \
operating system's display settings. Flicker with variable refresh rate on: update the graphics driver and \
try another cable. Dead pixels beyond the panel's policy are a defect.""",
    ),
    (
        "wireless-peripherals",
        "Wireless keyboard or mouse lags or disconnects",
        "mouse",
        ["keyboard", "mouse", "wireless"],
        """\
Plug the receiver into a front port or an extension cable close to the device, away from Wi-Fi routers and \
USB 3 drives. Charge fully and update the firmware. Keys typing twice after the first month of use may be \
wear (not covered) or a defect (covered) depending on the switch; check the order date first.""",
    ),
    (
        "headset-microphone",
        "Headset microphone or audio not working",
        "headset",
        ["headset", "microphone"],
        """\
Select the headset as the input and output device, and check the mute switch on the cable or earcup. For \
wireless headsets pair again after charging. A microphone that picks up nothing on two computers is a \
defect.""",
    ),
    (
        "wifi-drops",
        "Wi-Fi disconnects or is slow",
        "networking",
        ["networking", "wifi", "router"],
        """\
Attach the adapter's antennas, install the vendor's driver, and move the router off the floor. Wi-Fi 6E \
and Wi-Fi 7 speeds need a client that supports them. Update the router's firmware before reporting a \
defect.""",
    ),
    (
        "prebuilt-restarts",
        "Prebuilt PC restarts or will not boot",
        "prebuilt",
        ["prebuilt", "boot"],
        """\
Remove the transport foam from the case before first power-on, and check the graphics card and its power \
cable stayed seated in transit. Connect the display to the graphics card. Restarts in games with the \
factory settings are covered by the system warranty; record what was tried before escalating.""",
    ),
    (
        "build-compatibility",
        "Checking a build's compatibility",
        "",
        ["compatibility", "build", "rules"],
        """\
Every build is checked against the compatibility rules: CPU socket vs motherboard socket, memory type vs \
board and CPU, cooler sockets, motherboard form factor vs case, graphics card length and cooler height vs \
case clearance, radiator size vs case mounts, power supply form factor vs case, and total power draw vs the \
power supply. Errors mean the parts do not work together; warnings mean they work with caveats. Retired \
rules are no longer applied. Fix an error by swapping the one part named in it.""",
    ),
)

FAQS = (
    (
        "faq-track-order",
        "How do I track my order?",
        ["shipping", "tracking"],
        """\
Your shipment's tracking number appears on the order once the label is created, with its latest scans. \
Ground orders arrive in 2 to 5 business days after shipping.""",
    ),
    (
        "faq-refund-timing",
        "When will I get my refund?",
        ["refunds"],
        """\
5 to 10 business days after your returned item arrives and is inspected, to your original payment method. \
Refunds for defective items are approved without waiting for the item. Shipping charges are not refunded \
once the order has shipped.""",
    ),
    (
        "faq-warranty-length",
        "How long is my warranty?",
        ["warranty"],
        """\
Each product page lists its warranty in months, counted from the day your order was delivered.""",
    ),
    (
        "faq-build-service",
        "Can you check my build before I order?",
        ["build", "compatibility"],
        """\
Yes. Save the build on your account and our compatibility checker lists any problem; our product \
specialists answer questions about builds over $2,000.""",
    ),
    (
        "faq-international",
        "Do you ship outside the US?",
        ["shipping"],
        """\
Not yet: we ship to US addresses only, including Alaska and Hawaii.""",
    ),
    (
        "faq-loyalty",
        "How do loyalty tiers work?",
        ["loyalty"],
        f"""\
Spend {_dollars(LOYALTY_TIER_SPEND["silver"])}, {_dollars(LOYALTY_TIER_SPEND["gold"])} or \
{_dollars(LOYALTY_TIER_SPEND["platinum"])} in {LOYALTY_SPEND_MONTHS} months for silver, gold or platinum: \
{LOYALTY_DISCOUNT_PCT["silver"]}%, {LOYALTY_DISCOUNT_PCT["gold"]}% or {LOYALTY_DISCOUNT_PCT["platinum"]}% off \
merchandise on every order.""",
    ),
    (
        "faq-change-address",
        "Can I change my shipping address?",
        ["order", "address change"],
        """\
Yes, until the order ships. Contact us with the order number; after shipping the address cannot change.""",
    ),
    (
        "faq-payment-declined",
        "Why was my payment declined?",
        ["payment", "billing"],
        """\
Your bank declined it (funds, an expired card, a security check or an address mismatch). No money was \
taken; retry with the same or another method and keep the same order.""",
    ),
    (
        "faq-price-match",
        "Do you price match?",
        ["price match"],
        f"""\
Within {PRICE_MATCH_WINDOW_DAYS} days of purchase, for the identical model at an authorized US retailer. \
Marketplace and clearance prices are excluded.""",
    ),
    (
        "faq-gift-orders",
        "Can I send an order as a gift?",
        ["order"],
        """\
Yes: add a note to the order and we leave prices off the packing slip. Returns are refunded to the buyer.""",
    ),
)

PROCEDURES = (
    (
        "proc-process-return",
        "Procedure: processing a return",
        ["returns", "procedure"],
        """\
1. Find the order and its shipment; note the delivery date. 2. Check the return window from delivery and \
the item's condition. 3. Work out the refund per the returns policy: the line's price less its discount \
share, less the restocking fee if it applies. 4. Create the refund on the order's \
payment with the returned line items. 5. Resolve the ticket with outcome refund_issued linking the refund.""",
    ),
    (
        "proc-warranty-claim",
        "Procedure: filing a warranty claim",
        ["warranty", "procedure"],
        """\
1. Find the delivery date and the product's warranty months; compute the end date and compare it with the day \
the customer reported the defect (file the claim on that ticket). 2. Ask for photos or a \
description that rules out the exclusions. 3. Within warranty and covered: file the claim and ship a \
replacement (outcome warranty_claim_filed or replacement_sent). 4. Otherwise explain why, politely, with \
the dates, and resolve with no_action.""",
    ),
    (
        "proc-escalate",
        "Procedure: escalating a ticket",
        ["escalation", "procedure"],
        """\
Create an escalation of the right type and destination (see the escalation rules), write what you checked \
and what you need, set the ticket to escalated, and tell the customer when to expect an answer.""",
    ),
    (
        "proc-duplicate-charge",
        "Procedure: handling a duplicate charge",
        ["billing", "procedure"],
        """\
1. List the order's payments and their transaction ids. 2. If two payments went through for one order, \
refund the later one in full. 3. Escalate (policy_exception) if it is over the refund limit. 4. Reply with \
both transaction ids.""",
    ),
    (
        "proc-compatibility-check",
        "Procedure: answering a compatibility question",
        ["compatibility", "procedure"],
        """\
Run the build's parts through the compatibility checker, name each violated rule and the two parts, and \
propose one replacement part per error, with its price. Mention warnings separately.""",
    ),
)


# Policies written after the manuals (appended after them, so every older article keeps its id).
LATE_POLICIES = (
    (
        "disputed-payments",
        "Disputed payments and chargebacks",
        ["payment", "chargeback", "dispute", "billing", "lost parcel"],
        """\
When a customer disputes a charge with their card issuer or bank (a chargeback), the payment shows as disputed \
and the order's notes say when and why. The bank holds that money while it decides: we never refund a disputed \
payment ourselves, because the bank gives the money back if the dispute goes the customer's way, and a refund as \
well would pay them twice. Escalate it as a policy_exception to a team lead with the evidence (the tracking \
scans, the delivery record, the customer's messages); the team lead answers the bank through finance.

A charge on an order that never shipped, or whose parcel the carrier lost: while the payment is not disputed, \
cancel the order or refund it in full, shipping included (see cancelling an order and delivery problems). Once \
the customer has disputed it, tell them the bank will return the money when the dispute closes and that they \
will not be charged twice; do not refund or reship on top of the dispute. A customer who would rather have the \
parcel again withdraws the dispute with the bank first.""",
    ),
    (
        "return-window-dates",
        "Return window: which date counts",
        ["returns", "return window", "delivery date", "split shipment"],
        f"""\
The {RETURN_WINDOW_DAYS}-day return window counts from the delivery date in the carrier's tracking, never from the \
order date or the payment date: an order placed six weeks ago and delivered last week is inside the window. The \
day of delivery is day 0, so the last day to return is the delivery date plus {RETURN_WINDOW_DAYS} days. An order \
that came in several parcels counts from the day its last delivered parcel arrived; an order not delivered yet has \
not started its window (see delivery problems). The order's details show the delivery date and the window's last \
day, and the agent compares them with the day the customer asked.""",
    ),
)


def build_knowledge_base(
    *, timeline: Timeline, products: list[Product], line_counts: Counter, scale: float, sink: RowSink
) -> KnowledgeBase:
    kb = KnowledgeBase()
    number = 0

    def add(
        slug: str, title: str, kind: str, body: str, tags: list[str], *, category: str = "", product=None, written: date
    ) -> None:
        nonlocal number
        number += 1
        article_id = f"kb-{number:04d}"
        kb.ids_by_slug[slug] = article_id
        sink.add(
            KnowledgeBaseArticle(
                id=article_id,
                slug=slug,
                title=title,
                kind=kind,
                product_category=category,
                product_id=product.id if product else None,
                body=body,
                tags=tags,
                is_published=True,
                created_at=timeline.at(written, 10),
                updated_at=timeline.at(written, 10),
            )
        )

    for index, (slug, title, tags, body) in enumerate(POLICIES):
        add(slug, title, "policy", body, tags, written=date(2024, 1 + index % 12, 2))
    for index, (slug, title, category, tags, body) in enumerate(TROUBLESHOOTING):
        add(slug, title, "troubleshooting", body, tags, category=category, written=date(2023, 3 + index % 9, 5))
        if category:
            kb.guide_by_category.setdefault(category, kb.ids_by_slug[slug])
    for category, slug in (("keyboard", "wireless-peripherals"), ("workstation", "prebuilt-restarts")):
        kb.guide_by_category.setdefault(category, kb.ids_by_slug[slug])
    for index, (slug, title, tags, body) in enumerate(FAQS):
        add(slug, title, "faq", body, tags, written=date(2023, 6 + index % 6, 12))
    for index, (slug, title, tags, body) in enumerate(PROCEDURES):
        add(slug, title, "procedure", body, tags, written=date(2024, 2 + index, 20))
    # Manuals for the best sellers that have a manual template, the most ordered first.
    manual_count = max(5, round(MANUALS_AT_SCALE_1 * min(scale, 4) ** 0.5))
    by_id = {p.id: p for p in products}
    ranked = sorted(line_counts.items(), key=lambda item: (-item[1], item[0]))
    made = 0
    for product_id, _count in ranked:
        product = by_id[product_id]
        body = _manual_body(product)
        if body is None:
            continue
        slug = f"manual-{product.sku.lower()}"
        written = max(product.release_date or date(2023, 1, 1), date(2023, 1, 1))
        add(
            slug,
            f"Installation guide: {product.name}",
            "manual",
            body,
            ["manual", product.category],
            category=product.category,
            product=product,
            written=min(written, timeline.today),
        )
        made += 1
        if made >= manual_count:
            break
    for index, (slug, title, tags, body) in enumerate(LATE_POLICIES):
        add(slug, title, "policy", body, tags, written=min(date(2025, 8, 25 + index), timeline.today))
    return kb


def _manual_body(product: Product) -> str | None:
    s = product.specs
    name = product.name
    if product.category == "gpu":
        return (
            f"{name}: {s['length_mm']} mm long, {s['slots']:g} slots. Check the case's maximum graphics card "
            f"length before buying. Install in the top PCIe x16 slot, secure the bracket, and connect "
            f"{s['power_connectors']} from the power supply (one cable per connector). Board power {s['tdp_watts']} W; "
            f"use a power supply of {s['recommended_psu_watts']} W or more. Warranty: {product.warranty_months} months."
        )
    if product.category == "cpu":
        cooler = "Use the included cooler or" if s["cooler_included"] else "No cooler is included: use"
        return (
            f"{name}: socket {s['socket']}, {s['tdp_watts']} W. Align the triangle on the CPU with the socket "
            f"mark, lower it without force and close the retention arm. {cooler} a cooler rated for at least "
            f"{s['tdp_watts']} W that lists {s['socket']}. Supported memory: {', '.join(s['memory_types'])}. "
            f"Update the motherboard firmware before installing if the board predates the CPU."
        )
    if product.category == "motherboard":
        return (
            f"{name}: {s['form_factor']}, socket {s['socket']}, {s['memory_slots']} {s['memory_type']} slots up to "
            f"{s['max_memory_gb']} GB, {s['m2_slots']} M.2 slots. Install the CPU and memory before mounting the "
            f"board. With two modules use slots A2 and B2. Connect the 24-pin and 8-pin CPU power cables."
        )
    if product.category == "psu":
        return (
            f"{name}: {s['wattage']} W, {s['form_factor']}, {s['efficiency']}. Mount fan down if the case has a "
            f"bottom vent. Use only the modular cables in the box; cables from other units can destroy parts."
        )
    if product.category == "case":
        return (
            f"{name}: takes {', '.join(s['supported_motherboards'])} boards, graphics cards up to "
            f"{s['max_gpu_length_mm']} mm, CPU coolers up to {s['max_cooler_height_mm']} mm, "
            f"{s['psu_form_factor']} power supplies; radiators: "
            f"{', '.join(str(r) for r in s['radiator_support_mm']) or 'none'} mm."
        )
    if product.category == "cooling":
        fit = f"{s['height_mm']} mm tall" if s["type"] == "air" else f"{s['radiator_size_mm']} mm radiator"
        return (
            f"{name}: {fit}, rated for {s['tdp_rating_watts']} W, sockets {', '.join(s['sockets'])}. Fit the "
            f"backplate for your socket, apply thermal compound if the base has none, tighten screws crosswise."
        )
    if product.category == "memory":
        return (
            f"{name}: {s['type']}, {s['modules']} module(s), {s['speed_mts']} MT/s CL{s['cas_latency']}. Fits "
            f"{s['type']} boards only. Enable the XMP/EXPO profile in the firmware to run at rated speed."
        )
    if product.category == "storage":
        return (
            f"{name}: {s['form_factor']}, {s['interface']}. "
            + (
                "Insert at 30 degrees into an M.2 slot and secure it."
                if s["type"] == "nvme"
                else "Mount in a drive bay and connect SATA data and power."
            )
            + " Initialise the disk in the operating system before use."
        )
    if product.category == "monitor":
        return (
            f"{name}: {s['resolution']} at up to {s['refresh_hz']} Hz. Use {', '.join(s['inputs'])}; for the "
            f"full refresh rate use DisplayPort or HDMI 2.1, then select it in the display settings."
        )
    return None

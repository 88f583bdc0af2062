"""A part swap in a customer's build that passes, or fails exactly one compatibility rule.

Selector: builds that pass every rule today; for up to three of their core parts (chosen by hash), one active
product of the same category to swap in. The verdict is what ``validate_build_compatibility`` (the one
evaluator, ``world_app.compatibility``) says about the changed parts list; only swaps that pass cleanly or
fail exactly one error rule (no warnings) become tasks. A draft or saved build is changed when the swap
passes (``update_build``); an ordered or assembled build is never changed (the reply says why).
"""

from __future__ import annotations

from world_app.models import Build, Product
from world_app.store_rules import BUILD_EDITABLE_STATUSES
from world_app.tools.registry import invoke_tool

from .base import (
    Family,
    FamilyInstance,
    called,
    pick,
    reply_tone,
    says,
    says_number,
    says_pattern,
    stable_hash,
    state,
    tidy,
)

SWAP_CATEGORIES = ("cpu", "motherboard", "gpu", "memory", "case", "cooling", "psu")
SWAPS_PER_BUILD = 3
NOT_COMPATIBLE = r"not compatible|incompatible|won't (?:fit|work)|will not (?:fit|work)|doesn't fit|does not fit"
ASKS = (
    "Hi, it's {name}. In my build {build} (\"{build_name}\") I'd like to replace the {old} with the {new}. {ask}",
    'Hello! Quick question about build {build}, "{build_name}": would the {new} work instead of my {old}? {ask}',
    "{name} here. I'm thinking of swapping the {old} in build {build} for the {new}. {ask}",
    'Hey support, for my build {build} ("{build_name}") can I use the {new} in place of the {old}? {ask} '
    "Thanks, {name}",
)
ASK_EDITABLE = (
    "If it's compatible, please make the change in the build.",
    "Please update the build if the parts work together.",
    "Go ahead and swap it in if nothing conflicts.",
)
ASK_LOCKED = (
    "Would it be compatible with the rest of the parts?",
    "Can you check that it works with everything else first?",
    "Please tell me whether it fits with the other parts.",
)


class BuildPartSwapFamily(Family):
    name = "build_part_swap"
    title = "A part swap in a build: compatible, or failing one rule"
    description = "Check a proposed part swap with the compatibility rules; apply it to an editable build if it passes."
    task_type = "reasoning"

    def candidates(self):
        by_category: dict[str, list[Product]] = {}
        for product in Product.objects.filter(lifecycle="active", category__in=SWAP_CATEGORIES).order_by("id"):
            by_category.setdefault(product.category, []).append(product)
        builds = Build.objects.select_related("customer").prefetch_related("components__product").order_by("id")
        for build in builds:
            components = list(build.components.all())
            today = invoke_tool("validate_build_compatibility", {"build_id": build.id}) if components else {}
            if not components or today.get("error_count", 1) or today.get("warning_count", 1):
                continue
            swappable = [c for c in components if c.product.category in SWAP_CATEGORIES and c.quantity == 1]
            swappable.sort(key=lambda c: stable_hash(build.id, c.product_id))
            for component in swappable[:SWAPS_PER_BUILD]:
                options = [p for p in by_category.get(component.product.category, []) if p.id != component.product_id]
                if options:
                    yield (build, component, pick(options, build.id, component.product_id, "new"))

    def entity_ids(self, candidate) -> tuple[str, ...]:
        build, component, new = candidate
        return (build.id, component.product_id, new.id)

    def build(self, candidate, sim) -> FamilyInstance | None:
        build, component, new = candidate
        old = component.product
        parts = [
            {"product_id": new.id if c.product_id == old.id else c.product_id, "quantity": c.quantity}
            for c in build.components.all()
        ]
        check = {"tool": "validate_build_compatibility", "arguments": {"parts": parts}}
        verdict = sim.run([check])[0]
        if "error" in verdict or verdict["warning_count"] or verdict["error_count"] > 1:
            return None
        key = "+".join(self.entity_ids(candidate))
        editable = build.status in BUILD_EDITABLE_STATUSES
        customer = build.customer
        instruction = tidy(
            pick(ASKS, key, "ask").format(
                name=f"{customer.first_name} {customer.last_name}",
                build=build.id,
                build_name=build.name,
                old=old.name,
                new=new.name,
                ask=pick(ASK_EDITABLE if editable else ASK_LOCKED, key, "ask2"),
            )
        )
        compatible = verdict["error_count"] == 0
        watts = verdict["estimated_draw_watts"]
        tone = reply_tone(customer.first_name)
        new_in = state(
            f"{new.name} ({new.id}) is in build {build.id}.",
            "buildcomponent",
            {"build": build.id, "product": new.id},
            "count_eq",
            value=1,
        )
        new_out = state(
            f"Build {build.id} does not get {new.name} ({new.id}).",
            "buildcomponent",
            {"build": build.id, "product": new.id},
            "count_eq",
            value=0,
        )
        checked = called("The swapped parts list was checked for compatibility.", "validate_build_compatibility")
        calls = [check]
        if compatible and editable:
            update = {
                "tool": "update_build",
                "arguments": {
                    "build_id": build.id,
                    "remove_product_ids": [old.id],
                    "add_parts": [{"product_id": new.id, "quantity": 1}],
                },
            }
            if "error" in sim.run([check, update])[-1]:
                return None
            calls.append(update)
            answer = (
                f"Hi {customer.first_name}, good news: the {new.name} is compatible with the rest of build "
                f"{build.id}, and all {verdict['rules_checked']} compatibility checks pass.\n"
                f"I've swapped it in for the {old.name}; the build's estimated power draw is now {watts} W.\n"
                "You can review the updated build in your account before ordering."
            )
            criteria = [
                new_in,
                state(
                    f"{old.name} ({old.id}) was taken out of build {build.id}.",
                    "buildcomponent",
                    {"build": build.id, "product": old.id},
                    "count_eq",
                    value=0,
                ),
                {**checked, "weight": 1},
                says_number(f"The reply gives the new estimated power draw ({watts} W).", watts, weight=1),
                tone,
            ]
            outcome, difficulty = "compatible, applied", "medium"
        elif compatible:
            answer = (
                f"Hi {customer.first_name}, the {new.name} would be compatible with the other parts of build "
                f"{build.id}: all {verdict['rules_checked']} compatibility checks pass, with an estimated draw of "
                f"{watts} W.\n"
                f"The build is already {build.status}, though, so its parts can't be changed; we can start a new "
                "build with the swap if you like."
            )
            criteria = [
                new_out,
                {**checked, "required": True},
                says_number(f"The reply gives the estimated power draw with the swap ({watts} W).", watts),
                says_pattern(
                    f"The reply explains that an {build.status} build can't be changed.",
                    rf"already {build.status}|{build.status} build",
                    weight=1,
                ),
                tone,
            ]
            outcome, difficulty = f"compatible, build {build.status}", "medium"
        else:
            violation = verdict["violations"][0]
            message = violation["message"].rstrip(".")
            answer = (
                f"Hi {customer.first_name}, I checked the swap for build {build.id} and the {new.name} is not "
                f"compatible with it: {message} ({violation['rule_name']}).\n"
                f"I have left the build as it is. If you like, I can suggest a {new.category} that fits."
            )
            criteria = [
                new_out,
                {**checked, "required": True},
                says_pattern("The reply says the part is not compatible.", NOT_COMPATIBLE, required=True),
                says(f"The reply names the rule that fails ({violation['rule_name']}).", violation["rule_name"]),
                tone,
            ]
            outcome, difficulty = f"fails {violation['rule_id']}", "hard"
        return self.instance(
            calls=calls,
            answer=answer,
            entity_ids=self.entity_ids(candidate),
            title=f"Swap {old.category} in {build.id} for {new.name} ({outcome})",
            branch="applied" if outcome.endswith("applied") else ("incompatible" if not compatible else "build locked"),
            difficulty=difficulty,
            instruction=instruction,
            criteria=criteria,
            tags=["compatibility", "builds", "family"],
            reviewer_notes=(
                f"Build {build.id} ({build.status}) passes today; with {new.id} instead of {old.id}: "
                f"{verdict['error_count']} error(s), draw {watts} W."
            ),
        )

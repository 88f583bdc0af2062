"""Write tools on customers' PC builds. Every answer carries the build's compatibility report."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from world_app import clock
from world_app.models import Build, BuildComponent, Customer, Product
from world_app.store_rules import BUILD_EDITABLE_STATUSES
from world_app.tools.baked import create_row, save_fields
from world_app.tools.compute import (
    ACTIVE_RULES,
    BUILD_COMPONENTS,
    compatibility_report,
    products_by_id,
    resolve_parts,
)
from world_app.tools.ids import new_ids
from world_app.tools.lookups import fetch
from world_app.tools.params import EntityId, ProductQuantity, ToolParams
from world_app.tools.records import build_record
from world_app.tools.registry import tool
from world_app.tools.results import ErrorCode, ToolError


def _save_parts(build: Build, parts: list[tuple[Product, int]]) -> list[BuildComponent]:
    # One baked INSERT per part (create_row): the ORM's bulk_create compiled its statement on every call.
    ids = new_ids(BuildComponent, len(parts))
    return [
        create_row(BuildComponent, id=component_id, build=build, product=product, quantity=quantity)
        for component_id, (product, quantity) in zip(ids, parts, strict=True)
    ]


def _components(build: Build) -> list[BuildComponent]:
    """The build's components by id with their products: ``select_related("product")``, as two baked look-ups."""
    components = BUILD_COMPONENTS(build.id)
    products = products_by_id(c.product_id for c in components)
    for component in components:
        component.product = products[component.product_id]
    return components


def _answer(build: Build, components: list[BuildComponent]) -> dict:
    """The build as search_builds shows it, and its compatibility report; ``components`` carry their products."""
    components = sorted(components, key=lambda c: c.id)
    parts = [(c.product, c.quantity) for c in components]
    rules = ACTIVE_RULES()
    report = compatibility_report(parts, rules, build_id=build.id)
    report.pop("parts")
    return {"build": build_record(build, components), "compatibility": report}


class CreateBuildParams(ToolParams):
    customer_id: EntityId = Field(description="The customer the build is for.")
    name: str = Field(min_length=1, max_length=120, description="A name the customer will recognise.")
    parts: list[ProductQuantity] = Field(min_length=1, max_length=40, description="Products and quantities.")
    notes: str = Field("", max_length=2000, description="Notes for the customer or the assembler.")
    status: Literal["draft", "saved"] = Field("draft", description="draft (being worked on) or saved.")


@tool(group="write", params=CreateBuildParams)
def create_build(p: CreateBuildParams) -> dict:
    """Create a PC build for a customer from a list of parts, and check it.

    Refused when a product does not exist. Discontinued or end-of-life parts are accepted but reported in
    `compatibility.unavailable_parts`. Returns the build (parts, prices, total) and its compatibility report
    (violations by rule, power draw, missing core parts); fix errors with update_build.
    """
    customer = fetch(Customer, p.customer_id, field="customer_id")
    parts = resolve_parts(p.parts, field="parts")
    now = clock.world_now()
    build = create_row(
        Build,
        id=new_ids(Build)[0],
        customer=customer,
        name=p.name,
        status=p.status,
        notes=p.notes,
        created_at=now,
        updated_at=now,
    )
    return _answer(build, _save_parts(build, parts))


class UpdateBuildParams(ToolParams):
    build_id: EntityId = Field(description="The build to change.")
    name: str | None = Field(None, min_length=1, max_length=120, description="A new name.")
    notes: str | None = Field(None, max_length=2000, description="New notes (replace the old ones).")
    status: Literal["draft", "saved"] | None = Field(None, description="draft or saved.")
    set_parts: list[ProductQuantity] | None = Field(
        None, min_length=1, max_length=40, description="Replace all parts with these."
    )
    add_parts: list[ProductQuantity] = Field(
        default_factory=list, max_length=40, description="Parts to add (a product already there gains the quantity)."
    )
    remove_product_ids: list[EntityId] = Field(
        default_factory=list, max_length=40, description="Products to take out of the build."
    )

    @model_validator(mode="after")
    def _something_to_change(self) -> UpdateBuildParams:
        if self.set_parts is not None and (self.add_parts or self.remove_product_ids):
            raise ValueError("give set_parts, or add_parts/remove_product_ids, not both")
        if not (self.model_fields_set - {"build_id"}):
            raise ValueError("nothing to change: give name, notes, status, set_parts, add_parts or remove_product_ids")
        return self


@tool(group="write", params=UpdateBuildParams)
def update_build(p: UpdateBuildParams) -> dict:
    """Change a build: rename it, replace its notes or status, replace all parts, or add and remove parts.

    Only draft and saved builds can change; an ordered or assembled build is fixed. Returns the build and its
    new compatibility report.
    """
    build = fetch(Build, p.build_id, field="build_id")
    if build.status not in BUILD_EDITABLE_STATUSES:
        raise ToolError(
            ErrorCode.POLICY_VIOLATION,
            f"build {build.id} is {build.status}: only {' or '.join(sorted(BUILD_EDITABLE_STATUSES))} builds can "
            "change",
            field="build_id",
        )
    current = {c.product_id: c for c in _components(build)}
    if p.set_parts is not None:
        wanted = resolve_parts(p.set_parts, field="set_parts")
        parts_changed = True
    else:
        wanted = [(c.product, c.quantity) for c in current.values()]
        for index, product_id in enumerate(p.remove_product_ids):
            if product_id not in current:
                raise ToolError(
                    ErrorCode.NOT_FOUND,
                    f"build {build.id} has no part {product_id}; its parts are: {', '.join(current) or 'none'}",
                    field=f"remove_product_ids[{index}]",
                )
        wanted = [(product, q) for product, q in wanted if product.id not in set(p.remove_product_ids)]
        added = resolve_parts(p.add_parts, field="add_parts") if p.add_parts else []
        merged = {product.id: [product, q] for product, q in wanted}
        for product, quantity in added:
            if product.id in merged:
                merged[product.id][1] += quantity
            else:
                merged[product.id] = [product, quantity]
        wanted = [(product, q) for product, q in merged.values()]
        parts_changed = bool(p.add_parts or p.remove_product_ids)
    if parts_changed and not wanted:
        raise ToolError(ErrorCode.POLICY_VIOLATION, "a build keeps at least one part", field="remove_product_ids")
    components = list(current.values())
    if parts_changed:
        BuildComponent.objects.filter(build=build).delete()
        components = _save_parts(build, wanted)
    for name in ("name", "notes", "status"):
        value = getattr(p, name)
        if value is not None:
            setattr(build, name, value)
    build.updated_at = clock.world_now()
    save_fields(build, ["name", "notes", "status", "updated_at"])
    return _answer(build, components)

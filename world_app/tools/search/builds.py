"""Search tool for customers' PC builds (``search_builds``), each with its parts."""

from __future__ import annotations

from typing import Literal

from django.db.models import Q, QuerySet
from pydantic import Field

from world_app.models import Build, BuildComponent
from world_app.tools.baked import BakedQuery
from world_app.tools.lookups import PRODUCTS
from world_app.tools.params import EntityId, PageParams, SearchText, WorldTime, after_field, before_field
from world_app.tools.records import build_record
from world_app.tools.registry import tool
from world_app.tools.search.base import BakedSearch, choice_values, exact_filters, range_filter, text_filter


class SearchBuildsParams(PageParams):
    query: SearchText | None = Field(None, description="Words to find in the build's id, name or notes.")
    customer_id: EntityId | None = Field(None, description="Only this customer's builds.")
    status: Literal[choice_values(Build.Status)] | None = Field(
        None, description="Only builds in this status (draft, saved, ordered, assembled)."
    )
    product_id: EntityId | None = Field(None, description="Only builds that use this product.")
    created_after: WorldTime | None = after_field("builds created")
    created_before: WorldTime | None = before_field("builds created")
    sort: Literal["newest", "oldest"] = Field("newest", description="Order of results: newest or oldest first.")


BUILD_TEXT = ("id", "name", "notes")
BUILD_SORTS = {"newest": ("-created_at", "-id"), "oldest": ("created_at", "id")}


BUILD_COMPONENTS = BakedQuery(BuildComponent, lambda ids: BuildComponent.objects.filter(build_id__in=ids))


class BuildParts:
    """The parts of a page of builds, loaded in two baked queries (a prefetch costs several times more)."""

    def __init__(self) -> None:
        self.parts: dict[str, list[BuildComponent]] = {}

    def load(self, builds: list[Build]) -> None:
        components = BUILD_COMPONENTS([b.id for b in builds])
        products = {product.id: product for product in PRODUCTS(sorted({c.product_id for c in components}))}
        for component in components:
            component.product = products[component.product_id]
            self.parts.setdefault(component.build_id, []).append(component)

    def record(self, build: Build) -> dict:
        return build_record(build, self.parts.get(build.id, []))


@tool(group="search", params=SearchBuildsParams)
def search_builds(p: SearchBuildsParams) -> dict:
    """Find customers' PC builds by customer, status, a product they use, words or date.

    Returns a page of builds with their parts (product, category, quantity, price). To check that a build's
    parts work together, call validate_build_compatibility with its id.
    """
    parts = BuildParts()
    return BUILD_SEARCH.page(p, parts.record, parts.load)


def _builds(p: SearchBuildsParams) -> QuerySet:
    condition = (
        text_filter(p.query, BUILD_TEXT, Build)
        & range_filter("created_at", p.created_after, p.created_before)
        & exact_filters(customer_id=p.customer_id, status=p.status)
    )
    if p.product_id:
        condition &= Q(id__in=BuildComponent.objects.filter(product_id=p.product_id).values("build_id"))
    return Build.objects.filter(condition).order_by(*BUILD_SORTS[p.sort])


BUILD_SEARCH = BakedSearch(
    Build,
    SearchBuildsParams,
    _builds,
    values=("customer_id", "product_id"),
    unbaked=("created_after", "created_before"),
    text_fields=BUILD_TEXT,
    sorts=BUILD_SORTS,
)

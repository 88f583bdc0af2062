"""Look-ups of the live world while writing a task: search as you type (htmx) and an entity page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.http import require_GET

from world_app.selectors_entity import world_entity
from world_app.selectors_lookup import LOOKUP_KINDS, world_lookup

# Reading the live world is a grant of the roles that work on it (authors, reviewers, admins), not of a login.
VIEW_LIVE_WORLD = "world_app.view_customer"
NUL_REFUSED = "A NUL character (\\0) is not allowed in a look-up."


def _page_number(value: str | None) -> int:
    try:
        return max(1, min(int(value or 1), 10_000))
    except ValueError:
        return 1


@require_GET
@login_required
@permission_required(VIEW_LIVE_WORLD, raise_exception=True)
def lookup(request: HttpRequest) -> HttpResponse:
    """Search customers, orders, products or tickets; an htmx request gets the results list only."""
    kind = request.GET.get("kind") or "order"
    if kind not in LOOKUP_KINDS:
        kind = "order"
    query = (request.GET.get("q") or "").strip()[:100]
    if "\x00" in query or "\x00" in request.GET.get("page", ""):
        return HttpResponseBadRequest(NUL_REFUSED)
    results = world_lookup(kind=kind, query=query, page=_page_number(request.GET.get("page")))
    context = {"kinds": LOOKUP_KINDS.values(), "kind": kind, "query": query, "results": results}
    if request.htmx:
        return render(request, "world/lookup.html#results", context)
    return render(request, "world/lookup.html", context)


@require_GET
@login_required
@permission_required(VIEW_LIVE_WORLD, raise_exception=True)
def entity(request: HttpRequest, entity_type: str, pk: str) -> HttpResponse:
    """Any row of the live world: its fields, the rows it references and the rows referencing it."""
    if "\x00" in pk or "\x00" in entity_type:
        return HttpResponseBadRequest(NUL_REFUSED)
    page = world_entity(entity_type=entity_type, pk=pk)
    if request.htmx:
        return render(request, "world/entity.html#entity", {"entity": page})
    return render(request, "world/entity.html", {"entity": page, "standalone": True})

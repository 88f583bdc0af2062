"""World pages: the home page (the world at a glance) and the tool reference."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from corecraft_site.roles import user_roles
from world_app.episodes import SnapshotNotPublished
from world_app.selectors import world_overview
from world_app.snapshots import snapshot_latest
from world_app.tool_reference import tool_reference


@login_required
def tools_page(request: HttpRequest) -> HttpResponse:
    """Every agent tool: what it does, its parameters, and a real call and result on the latest snapshot."""
    try:
        snapshot = snapshot_latest()
    except SnapshotNotPublished:
        snapshot = None
    groups = tool_reference(snapshot=snapshot)
    context = {"groups": groups, "snapshot": snapshot, "tool_count": sum(len(g.tools) for g in groups)}
    return render(request, "world/tools.html", context)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    context = {"roles": sorted(user_roles(request.user)), "world_time_zone": settings.WORLD_TIME_ZONE}
    return render(request, "home.html", {**context, **world_overview()})

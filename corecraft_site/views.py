from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from tasks_app.roles import user_roles
from world_app.selectors import world_overview


@login_required
def home(request: HttpRequest) -> HttpResponse:
    context = {"roles": sorted(user_roles(request.user)), "world_time_zone": settings.WORLD_TIME_ZONE}
    return render(request, "home.html", {**context, **world_overview()})


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness plus the two services the app cannot work without."""
    from django.core.cache import cache

    status = {"postgres": "ok", "redis": "ok"}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - reported, not raised: this is the health check
        status["postgres"] = f"error: {exc.__class__.__name__}"
    try:
        cache.set("healthz", "1", 5)
    except Exception as exc:  # noqa: BLE001
        status["redis"] = f"error: {exc.__class__.__name__}"
    ok = all(v == "ok" for v in status.values())
    return JsonResponse(status, status=200 if ok else 503)

"""The project's own pages: the health check and the throttled login (the apps' pages are in the apps)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness plus the two services the app cannot work without."""
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


class ThrottledLoginView(LoginView):
    """The login page, refusing a name (and an address) after too many failed attempts: 429 for a while.

    Counted in the cache (Redis) per name and per client address, so every web process sees the same counts.
    """

    def _keys(self) -> list[str]:
        address = self.request.META.get("REMOTE_ADDR", "")
        name = (self.request.POST.get("username") or "").strip().lower()[:150]
        prefix = settings.LOGIN_THROTTLE_KEY_PREFIX
        return [f"{prefix}:name:{name}", f"{prefix}:addr:{address}"]

    def _throttled(self) -> bool:
        counts = cache.get_many(self._keys())
        name_key, address_key = self._keys()
        return (
            counts.get(name_key, 0) >= settings.LOGIN_FAILURES_PER_NAME
            or counts.get(address_key, 0) >= settings.LOGIN_FAILURES_PER_ADDRESS
        )

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if self._throttled():
            form = self.get_form()
            minutes = max(1, settings.LOGIN_LOCKOUT_S // 60)
            form.errors.clear()
            form.add_error(None, f"Too many failed attempts: try again in {minutes} minutes.")
            return self.render_to_response(self.get_context_data(form=form), status=429)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        for key in self._keys():
            cache.add(key, 0, settings.LOGIN_LOCKOUT_S)
            try:
                cache.incr(key)
            except ValueError:  # expired between add and incr
                cache.set(key, 1, settings.LOGIN_LOCKOUT_S)
        return super().form_invalid(form)

    def form_valid(self, form):
        cache.delete(self._keys()[0])
        return super().form_valid(form)

"""The site's own 404 page under DEBUG too: Django's technical one lists every URL pattern of the site."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

# What only Django's technical 404 page says (it answers every unknown URL while DEBUG is on).
TECHNICAL_MARK = b"DEBUG = True"


class PlainNotFoundMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            settings.DEBUG
            and response.status_code == 404
            and response.get("Content-Type", "").startswith("text/html")
            and not getattr(response, "streaming", False)
            and TECHNICAL_MARK in response.content
        ):
            return render(request, "404.html", status=404)
        return response

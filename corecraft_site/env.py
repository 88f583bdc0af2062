"""Strict parsing of settings from the environment.

A typo in a deployment variable must stop the process at start-up with a message that names the
variable, not surface later as a wrong default.
"""

from __future__ import annotations

import os
from datetime import datetime
from urllib.parse import parse_qsl, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def _env_number(name: str, default, parse, what: str, minimum, maximum):
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = parse(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not {what}") from None
    if value != value:  # NaN
        raise ImproperlyConfigured(f"{name}={raw!r} is not {what}")
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} is above the maximum {maximum}")
    return value


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    return _env_number(name, default, int, "an integer", minimum, maximum)


def env_float(name: str, default: float, *, minimum: float | None = None, maximum: float | None = None) -> float:
    return _env_number(name, default, float, "a number", minimum, maximum)


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_datetime(name: str, default: str) -> datetime:
    """An ISO 8601 timestamp with an explicit UTC offset (naive times are ambiguous in a world clock)."""
    raw = os.environ.get(name, default)
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an ISO 8601 timestamp") from None
    if value.tzinfo is None:
        raise ImproperlyConfigured(f"{name}={raw!r} needs a UTC offset, e.g. 2025-09-15T14:00:00-05:00")
    return value


def parse_database_url(url: str) -> dict:
    """A postgres:// URL as a Django DATABASES entry (only Postgres is supported for the live world)."""
    parts = urlparse(url)
    if parts.scheme not in {"postgres", "postgresql"}:
        raise ImproperlyConfigured(f"DATABASE_URL must be a postgres:// URL, got scheme {parts.scheme!r}")
    name = unquote(parts.path.lstrip("/"))
    if not name:
        raise ImproperlyConfigured("DATABASE_URL names no database (postgres://user@host:port/NAME)")
    try:
        port = parts.port
    except ValueError:
        raise ImproperlyConfigured(f"DATABASE_URL has an invalid port: {url!r}") from None
    return {
        "ENGINE": "corecraft_site.postgres",  # Django's, failing fast with the cause (see corecraft_site/postgres)
        "NAME": name,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(port or ""),
        "OPTIONS": dict(parse_qsl(parts.query)),
    }

"""A service's refusal, read by its callers: services raise ``ValidationError({field: [why, ...]})`` (the field
named as the service's argument, or a path into it such as ``policies[0].endpoint``); pages put each why on
the form field it is about, and show the others on the form or as messages. No caller parses text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

_HEAD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*")


def error_fields(exc: ValidationError) -> dict[str, list[str]]:
    """``{field: [why, ...]}`` of ``exc``; errors that name no field are under ``NON_FIELD_ERRORS``."""
    if hasattr(exc, "error_dict"):
        return {field: [m for e in errors for m in e.messages] for field, errors in exc.error_dict.items()}
    return {NON_FIELD_ERRORS: list(exc.messages)}


def error_lines(exc: ValidationError) -> list[str]:
    """One line per error, ``field: why`` (the why alone when it names no field): for a command or a log."""
    return [
        why if field == NON_FIELD_ERRORS else f"{field}: {why}"
        for field, whys in error_fields(exc).items()
        for why in whys
    ]


def add_service_errors(form: forms.Form, exc: ValidationError, *, aliases: Mapping[str, str] | None = None) -> None:
    """Put each error of ``exc`` on the form field it names (``aliases`` maps a service's argument, the head of
    its path, to the form's field), the rest on the form as a whole."""
    aliases = aliases or {}
    for field, whys in error_fields(exc).items():
        match = _HEAD.match(field) if field != NON_FIELD_ERRORS else None
        name = aliases.get(match.group(0), match.group(0)) if match else None
        if name not in form.fields and field in form.fields:
            name = field
        form.add_error(name if name in form.fields else None, whys)

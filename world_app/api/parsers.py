from __future__ import annotations

import codecs
import json
import math

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is too large to represent")
    return value


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


class StrictJSONParser(JSONParser):
    """JSON only: numbers a float cannot hold (``1e400``), NaN and Infinity, and absurdly deep nesting are a 400
    like any other malformed body (never an ``inf`` that no column can store, or a RecursionError)."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            decoded = codecs.getreader(encoding)(stream)
            return json.load(decoded, parse_float=_finite_float, parse_constant=_no_constant)
        except RecursionError:
            raise ParseError("JSON parse error - the body is nested too deeply") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None

from __future__ import annotations

from rest_framework.negotiation import DefaultContentNegotiation


class _NoFormatOverride:
    URL_FORMAT_OVERRIDE = None


class AcceptHeaderNegotiation(DefaultContentNegotiation):
    """The renderer follows the Accept header only: on the tool list, ``?format=`` names the schema format."""

    settings = _NoFormatOverride()

from __future__ import annotations

from functools import cache

from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination


class ApiPagination(LimitOffsetPagination):
    default_limit = 50
    max_limit = 500


@cache
def paginated(item: type[serializers.Serializer]) -> type[serializers.Serializer]:
    """The OpenAPI shape of an ``ApiPagination`` page of ``item``s (for ``extend_schema`` only)."""
    name = getattr(getattr(item, "Meta", None), "ref_name", None) or item.__name__.removesuffix("Serializer")

    class Meta:
        ref_name = f"Paginated{name}List"

    fields = {
        "count": serializers.IntegerField(help_text="How many items in all."),
        "next": serializers.URLField(allow_null=True, help_text="The next page, or null on the last one."),
        "previous": serializers.URLField(allow_null=True, help_text="The previous page, or null on the first."),
        "results": item(many=True),
        "Meta": Meta,
    }
    return type(f"Paginated{name}ListSerializer", (serializers.Serializer,), fields)

"""Saved filters: a person's named filters and order of a list page (the review queue), kept to open again."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction

from tasks_app.models import SavedFilter, SavedFilterPage

SAVED_FILTERS_PER_PAGE = 20
NAME_MAX = 80
QUERY_MAX = 1000


@transaction.atomic
def saved_filter_save(*, user, page: str, name: str, query: str) -> SavedFilter:
    """Save ``query`` (the page's cleaned query string) under ``name`` for ``user``; a name already saved on the
    page is updated. Raises ValidationError with field errors (name, query, page)."""
    name = " ".join((name or "").split())
    problems: dict[str, str] = {}
    if page not in SavedFilterPage.values:
        problems["page"] = f"Filters are saved for {', '.join(SavedFilterPage.values)} only."
    if not name:
        problems["name"] = "Give the filters a name."
    elif len(name) > NAME_MAX:
        problems["name"] = f"A name of at most {NAME_MAX} characters."
    if len(query or "") > QUERY_MAX:
        problems["query"] = f"These filters are too long to save (at most {QUERY_MAX} characters)."
    mine = SavedFilter.objects.select_for_update().filter(user=user, page=page)
    if not problems and not mine.filter(name=name).exists() and mine.count() >= SAVED_FILTERS_PER_PAGE:
        problems["name"] = f"You have {SAVED_FILTERS_PER_PAGE} saved filters here: delete one first."
    if problems:
        raise ValidationError(problems)
    saved, _ = SavedFilter.objects.update_or_create(user=user, page=page, name=name, defaults={"query": query or ""})
    return saved


def saved_filter_delete(*, user, filter_id: int) -> str:
    """Delete one of ``user``'s saved filters and return its name; SavedFilter.DoesNotExist when it is not theirs."""
    saved = SavedFilter.objects.get(pk=filter_id, user=user)
    saved.delete()
    return saved.name

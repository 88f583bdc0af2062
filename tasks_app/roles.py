"""The three roles of Corecraft Studio, as Django groups (created by a data migration)."""

from __future__ import annotations

AUTHOR = "author"
REVIEWER = "reviewer"
ADMIN = "admin"
ROLES = (AUTHOR, REVIEWER, ADMIN)


def user_roles(user) -> set[str]:
    if not user.is_authenticated:
        return set()
    roles = set(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
    if user.is_superuser:
        roles.add(ADMIN)
    return roles

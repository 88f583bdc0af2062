"""The three roles of Corecraft Studio, as Django groups (created by a data migration in ``tasks_app``).

Plumbing every app asks (a page's navigation, the judge registry, verdict labels, task permissions), so it lives
below the apps and knows no domain model: a role is a group name, read from the user's groups.
"""

from __future__ import annotations

AUTHOR = "author"
REVIEWER = "reviewer"
ADMIN = "admin"
ROLES = (AUTHOR, REVIEWER, ADMIN)


def user_roles(user) -> set[str]:
    """The user's roles, read once per user object (a request's user): pages check them several times.

    Like Django's own permission cache, a change of groups shows on the next request (a fresh user object).
    """
    if not user.is_authenticated:
        return set()
    cached = getattr(user, "_corecraft_roles", None)
    if cached is None:
        cached = frozenset(user.groups.filter(name__in=ROLES).values_list("name", flat=True))
        user._corecraft_roles = cached
    roles = set(cached)
    if user.is_superuser:
        roles.add(ADMIN)
    return roles


def is_admin(user) -> bool:
    return ADMIN in user_roles(user)

"""Writes of the studio: role permissions and demo logins here; tasks, reviews and reference runs in
``tasks_app.authoring.services.tasks``, ``.reviews`` and ``.reference``."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.db.models import Model

from corecraft_site.roles import ADMIN, AUTHOR, REVIEWER, ROLES
from world_app.models import WORLD_MODELS, Episode, WorldSnapshot

# What each role may do: (models, Django permission actions).
# Django permissions open the admin pages, and in the admin they are for the live world only: tasks, rubrics,
# judge configurations, endpoints, tokens and episodes are read and changed through the pages, whose checks
# (``tasks_app.permissions``) and services decide who may do what; the admin role holds every permission.
ROLE_GRANTS: dict[str, tuple[tuple[tuple[type[Model], ...], tuple[str, ...]], ...]] = {
    # Experts edit the live world; deleting world rows stays with admins.
    AUTHOR: (
        (WORLD_MODELS, ("view", "add", "change")),
        ((WorldSnapshot,), ("view",)),
        ((Episode,), ("open",)),  # their own episodes through the world API and MCP
    ),
    REVIEWER: (
        (WORLD_MODELS, ("view",)),
        ((WorldSnapshot,), ("view",)),
        ((Episode,), ("open",)),
    ),
}


def role_permission_codes(role: str) -> set[tuple[int, str]]:
    """(content type id, codename) of every permission the role is granted."""
    codes: set[tuple[int, str]] = set()
    for models, actions in ROLE_GRANTS.get(role, ()):
        content_types = ContentType.objects.get_for_models(*models, for_concrete_models=False) if models else {}
        for model, content_type in content_types.items():
            codes.update((content_type.pk, f"{action}_{model._meta.model_name}") for action in actions)
    return codes


@transaction.atomic
def role_permissions_sync() -> dict[str, int]:
    """Give the role groups exactly their permissions (idempotent); creates missing groups.

    ``admin`` gets every permission; ``author`` views, adds and changes world rows (not delete);
    ``reviewer`` views them. Returns the number of permissions each group now holds.
    """
    every_permission = list(Permission.objects.values_list("pk", "content_type_id", "codename"))
    by_code = {(ct, codename): pk for pk, ct, codename in every_permission}
    granted: dict[str, int] = {}
    for role in ROLES:
        group, _ = Group.objects.get_or_create(name=role)
        if role == ADMIN:
            wanted = {pk for pk, _, _ in every_permission}
        else:
            wanted = {by_code[code] for code in role_permission_codes(role) if code in by_code}
        current = set(group.permissions.values_list("pk", flat=True))
        if wanted - current:
            group.permissions.add(*(wanted - current))
        if current - wanted:
            group.permissions.remove(*(current - wanted))
        granted[role] = len(wanted)
    return granted


@dataclass(frozen=True)
class DemoLogin:
    role: str
    username: str
    password: str
    is_staff: bool
    is_superuser: bool


# Documented demo credentials for a local demo: never use them on a shared or public machine.
DEMO_LOGINS = (
    DemoLogin(role=AUTHOR, username="author", password="corecraft-author", is_staff=True, is_superuser=False),  # noqa: S106
    DemoLogin(role=REVIEWER, username="reviewer", password="corecraft-reviewer", is_staff=True, is_superuser=False),  # noqa: S106
    DemoLogin(role=ADMIN, username="admin", password="corecraft-admin", is_staff=True, is_superuser=True),  # noqa: S106
)


@transaction.atomic
def demo_users_ensure() -> list[tuple[DemoLogin, str]]:
    """Make sure one demo user per role exists, in its group, with its documented password.

    Idempotent: a second run changes nothing. Returns (login, what was done) per user, where what was done
    is "created", "updated" or "unchanged".
    """
    role_permissions_sync()
    user_model = get_user_model()
    outcome = []
    for login in DEMO_LOGINS:
        group = Group.objects.get(name=login.role)
        user, created = user_model.objects.get_or_create(username=login.username)
        changed = created
        if not user.check_password(login.password):
            user.set_password(login.password)
            changed = True
        for flag in ("is_staff", "is_superuser"):
            if getattr(user, flag) != getattr(login, flag):
                setattr(user, flag, getattr(login, flag))
                changed = True
        if not user.is_active:
            user.is_active = True
            changed = True
        if changed:
            user.save()
        if not user.groups.filter(pk=group.pk).exists():
            user.groups.add(group)
            changed = True
        outcome.append((login, "created" if created else "updated" if changed else "unchanged"))
    return outcome

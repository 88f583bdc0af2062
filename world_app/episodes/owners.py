"""Who may reach an episode: the user who opened it (through a session, an API token or MCP), or an admin.

A ``Credential`` is what a request or an MCP connection authenticated as: a session's user (``user:<id>``)
or a bearer token (``token:<id>``, made by ``trainer_bridge``, which knows the tokens). The episode keeps
its owner and the credential that opened it; the world API, the trainer API and MCP ask
``episodes_reachable``, and an episode of someone else is a 404, like a missing one.
"""

from __future__ import annotations

from django.db.models import QuerySet

from world_app.credentials import DRIVE_ANY_EPISODE, EPISODES_SCOPE, OPEN_EPISODE, Credential
from world_app.models import Episode


def session_credential(user) -> Credential | None:
    """A logged-in user's own credential: ``episodes`` when granted ``open_episode``; admins reach every episode."""
    if not (user and user.is_authenticated and user.is_active):
        return None
    scopes = frozenset({EPISODES_SCOPE}) if user.has_perm(OPEN_EPISODE) else frozenset()
    return Credential(
        key=f"user:{user.pk}", user_id=user.pk, scopes=scopes, any_episode=user.has_perm(DRIVE_ANY_EPISODE)
    )


def credential_of(*, auth, user) -> Credential | None:
    """A request's credential: its bearer token's (``auth.episode_credential``), else the session user's own."""
    token_credential = getattr(auth, "episode_credential", None)
    if token_credential is not None:
        return token_credential
    return session_credential(user)


def episodes_reachable(credential: Credential) -> QuerySet[Episode]:
    """The episodes ``credential`` may read, drive and close: those its user opened, with a session or any of
    their tokens (a trainer's rollout and reward workers may hold different tokens); every one for an admin."""
    if credential.any_episode:
        return Episode.objects.all()
    if credential.user_id is None:
        return Episode.objects.none()
    return Episode.objects.filter(owner_id=credential.user_id)


def episode_reachable(*, credential: Credential, episode_id) -> bool:
    return episodes_reachable(credential).filter(pk=episode_id).exists()

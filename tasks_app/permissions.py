"""Who may do what to a task: the one place the services (and, later, the pages) ask.

Authors create and edit their own tasks; reviewers review other people's; admins do everything, except
approving a task they authored or last edited.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied

from tasks_app.roles import ADMIN, AUTHOR, REVIEWER, user_roles


def is_admin(user) -> bool:
    return ADMIN in user_roles(user)


def _wrote(user, task) -> bool:
    last_editor = task.current_version.created_by_id if task.current_version_id else None
    return user.pk in (task.author_id, last_editor)


def task_create_check(user) -> None:
    if not {AUTHOR, ADMIN} & user_roles(user):
        raise PermissionDenied("only authors and admins create tasks")


def task_edit_check(user, task) -> None:
    roles = user_roles(user)
    if ADMIN in roles:
        return
    if AUTHOR in roles and task.author_id == user.pk:
        return
    raise PermissionDenied("only the task's author or an admin may change it")


def task_retire_check(user) -> None:
    if not is_admin(user):
        raise PermissionDenied("only admins retire tasks")


def review_check(user, task) -> None:
    """A reviewer (or admin) who neither authored the task nor made its current version."""
    if not {REVIEWER, ADMIN} & user_roles(user):
        raise PermissionDenied("only reviewers and admins review tasks")
    if _wrote(user, task):
        raise PermissionDenied("nobody reviews a task they authored or last edited")


def task_discuss_check(user, task) -> None:
    """Comments and reference runs: the task's author, reviewers and admins."""
    roles = user_roles(user)
    if {REVIEWER, ADMIN} & roles:
        return
    if AUTHOR in roles and task.author_id == user.pk:
        return
    raise PermissionDenied("only the task's author, reviewers and admins may do this")

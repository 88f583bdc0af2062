"""Who may do what to a task: the one place the services (and, later, the pages) ask.

Authors create and edit their own tasks; reviewers review other people's; admins do everything, except
approving a task they authored or last edited.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import Q

from corecraft_site.roles import ADMIN, AUTHOR, REVIEWER, is_admin, user_roles
from tasks_app.models import TaskStatus

# Django's name of the grant that reads a held-out task (the eval:read scope of a session).
READ_HOLDOUT = "tasks_app.read_holdout"
# What a reviewer reviews: every task that was ever submitted (a draft is its author's until then).
REVIEWED_STATUSES = (
    TaskStatus.IN_REVIEW,
    TaskStatus.CHANGES_REQUESTED,
    TaskStatus.APPROVED,
    TaskStatus.RETIRED,
)


def can_read_holdout(user) -> bool:
    """eval:read for a user: admins (whose group holds every permission), or a user granted ``read_holdout``."""
    if not user.is_authenticated:
        return False
    return ADMIN in user_roles(user) or user.has_perm(READ_HOLDOUT)


def task_visible_q(user) -> Q:
    """The tasks ``user`` may read (the same rule as ``task_view_check``), as a filter on ``Task``.

    A held-out task only with eval:read; otherwise admins all, reviewers what was submitted for review,
    authors their own tasks and the approved ones; nobody else anything.
    """
    roles = user_roles(user)
    if ADMIN in roles:
        visible = Q()
    else:
        visible = Q(pk__in=[])
        if REVIEWER in roles:
            visible |= Q(status__in=REVIEWED_STATUSES)
        if AUTHOR in roles:
            visible |= Q(author_id=user.pk) | Q(status=TaskStatus.APPROVED)
    if not can_read_holdout(user):
        visible &= Q(held_out=False)
    return visible


def task_view_check(user, task) -> None:
    """Reading a task, its rubric, versions, history and playground."""
    if task.held_out and not can_read_holdout(user):
        raise PermissionDenied("this task is held out for evaluation: reading it needs eval:read")
    roles = user_roles(user)
    if ADMIN in roles:
        return
    if REVIEWER in roles and task.status in REVIEWED_STATUSES:
        return
    if AUTHOR in roles and (task.author_id == user.pk or task.status == TaskStatus.APPROVED):
        return
    raise PermissionDenied("only the task's author, its reviewers and admins may read it")


def _wrote(user, task) -> bool:
    last_editor = task.current_version.created_by_id if task.current_version_id else None
    return user.pk in (task.author_id, last_editor)


def task_create_check(user) -> None:
    if not {AUTHOR, ADMIN} & user_roles(user):
        raise PermissionDenied("only authors and admins create tasks")


def task_edit_check(user, task) -> None:
    if task.held_out and not can_read_holdout(user):
        raise PermissionDenied("this task is held out for evaluation: reading it needs eval:read")
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
    task_view_check(user, task)
    if not {REVIEWER, ADMIN} & user_roles(user):
        raise PermissionDenied("only reviewers and admins review tasks")
    if _wrote(user, task):
        raise PermissionDenied("nobody reviews a task they authored or last edited")


def task_discuss_check(user, task) -> None:
    """Comments and reference runs: the task's author, reviewers and admins."""
    task_view_check(user, task)
    roles = user_roles(user)
    if {REVIEWER, ADMIN} & roles:
        return
    if AUTHOR in roles and task.author_id == user.pk:
        return
    raise PermissionDenied("only the task's author, reviewers and admins may do this")


def review_queue_check(user) -> None:
    """The review queue and its claims: reviewers and admins."""
    if not {REVIEWER, ADMIN} & user_roles(user):
        raise PermissionDenied("Only reviewers and admins review tasks. Your own tasks are under My work.")


def calibration_view_check(user) -> None:
    """Reading the calibration pages: any role."""
    if not user_roles(user):
        raise PermissionDenied("Calibration pages are for authors, reviewers and admins.")


def calibration_run_check(user) -> None:
    """Starting, cancelling or resuming a calibration run: reviewers and admins."""
    if not {REVIEWER, ADMIN} & user_roles(user):
        raise PermissionDenied("Only reviewers and admins start, cancel or resume calibration runs.")

"""The main navigation (a context processor): the sections a user's roles see, with a badge of their waiting work.

It lives in ``tasks_app`` because the badges count tasks; sections of other apps are named by URL only.
"""

from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse
from django.utils.functional import SimpleLazyObject

from corecraft_site.roles import user_roles
from tasks_app.authoring.selectors import work_counts

# (label, URL name, work_counts key for a badge or None, roles that see it or None for everyone).
SECTIONS: tuple[tuple[str, str, str | None, frozenset[str] | None], ...] = (
    ("Dashboard", "dashboard", None, frozenset({"admin"})),
    ("World", "home", None, None),
    ("Tasks", "tasks:list", None, None),
    ("My work", "review:mine", "my_work", frozenset({"author", "admin"})),
    ("Review", "review:queue", "to_review", frozenset({"reviewer", "admin"})),
    ("Calibration", "calibration:runs", None, None),
    ("Releases", "releases:list", None, None),
    ("Tools", "world:tools", None, None),
)


def navigation(request: HttpRequest) -> dict:
    """``nav``: the sections this user sees, each ``{label, url, active, badge}``; badges cost one query, lazily."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"nav": []}

    def sections() -> list[dict]:
        roles = user_roles(user)
        counts = work_counts(user=user)
        counts["my_work"] = counts.get("changes_requested", 0) + counts.get("drafts", 0)
        found = []
        for label, name, badge, seen_by in SECTIONS:
            if seen_by is not None and not (seen_by & roles):
                continue
            url = reverse(name)
            found.append({"label": label, "url": url, "active": False, "badge": counts.get(badge) if badge else None})
        # The current section is the longest URL the path starts with (/review/mine/ is My work, not Review).
        matching = [
            item
            for item in found
            if request.path == item["url"] or (item["url"] != "/" and request.path.startswith(item["url"]))
        ]
        if matching:
            max(matching, key=lambda item: len(item["url"]))["active"] = True
        return found

    return {"nav": SimpleLazyObject(sections)}

"""Review pages: the queue (its filters, saved filters, claiming the next task, bulk decisions, the reviewers'
agreement) and the author's own queue. Thin, like ``review``: reads through the selectors, writes through the
services.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from tasks_app.authoring.selectors import author_queue
from tasks_app.authoring.selectors_review import (
    QUEUE_FILTERS,
    review_agreement,
    review_queue_claim_states,
    review_queue_filtered,
    review_queue_first_free,
    review_queue_neighbour,
    saved_filters_of,
)
from tasks_app.authoring.services.review_bulk import review_bulk_decide
from tasks_app.authoring.services.reviews import ClaimUnavailable, review_claim
from tasks_app.authoring.services.saved_filters import saved_filter_delete, saved_filter_save
from tasks_app.authoring.views.review import forbidden_as_page
from tasks_app.calibration.selectors import FLAG_FILTERS, SORTS, with_cells
from tasks_app.models import ReviewDecision, SavedFilter, SavedFilterPage, TaskType
from tasks_app.permissions import review_queue_check

PAGE_SIZE = 25


# --- the queue ----------------------------------------------------------------------------------------------------


@require_GET
@login_required
@forbidden_as_page
def queue(request: HttpRequest) -> HttpResponse:
    """Tasks in review that this user may review, filterable by type, author, age and calibration, sortable;
    htmx swaps the table."""
    review_queue_check(request.user)
    return _queue_page(request, request.GET)


def _queue_page(request: HttpRequest, params, *, save_name: str = "", save_errors=None) -> HttpResponse:
    queue = review_queue_filtered(reviewer=request.user, params=params)
    page = Paginator(queue.tasks, PAGE_SIZE).get_page(params.get("page"))
    with_cells(page.object_list)
    now = timezone.now()
    review_queue_claim_states(page.object_list, user=request.user, now=now)
    errors, query = queue.errors, queue.query
    context = {
        "page": page,
        "filters": queue.values,
        "errors": errors,
        "authors": queue.authors,
        "task_types": TaskType.choices,
        "flag_filters": FLAG_FILTERS.items(),
        "sorts": [(key, label) for key, (label, _) in SORTS.items()],
        "query": query,
        "now": now,
        "saved_filters": saved_filters_of(user=request.user, page=SavedFilterPage.REVIEW_QUEUE),
        "save_name": save_name,
        "save_errors": save_errors or {},
        "agreement": review_agreement(),
    }
    template = "review/queue.html#queue-table" if request.htmx and not request.htmx.boosted else "review/queue.html"
    # htmx swaps only 2xx answers: the table comes back (bad filters left out); a full page says 400.
    bad = (errors and not request.htmx) or save_errors
    return render(request, template, context, status=400 if bad else 200)


@require_POST
@login_required
@forbidden_as_page
def filter_save(request: HttpRequest) -> HttpResponse:
    """Save the queue's current filters and order (``query``, read back through the queue's own filters: an
    unknown or invalid one is left out) under ``name``; the queue again with a field error when the name is bad."""
    review_queue_check(request.user)
    params = QueryDict(request.POST.get("query", "")[:4000])
    query = review_queue_filtered(reviewer=request.user, params=params).query
    name = request.POST.get("name", "")
    try:
        saved = saved_filter_save(user=request.user, page=SavedFilterPage.REVIEW_QUEUE, name=name, query=query)
    except ValidationError as exc:
        return _queue_page(request, QueryDict(query), save_name=name, save_errors=exc.message_dict)
    messages.success(request, f"Saved these filters as \u201c{saved.name}\u201d.")
    return redirect(reverse("review:queue") + (f"?{query}" if query else ""))


@require_POST
@login_required
@forbidden_as_page
def filter_delete(request: HttpRequest, filter_id: int) -> HttpResponse:
    """Delete one of your saved filters of the queue."""
    review_queue_check(request.user)
    try:
        name = saved_filter_delete(user=request.user, filter_id=filter_id)
    except SavedFilter.DoesNotExist:
        raise Http404("You have no saved filter with that id.") from None
    messages.info(request, f"Deleted the saved filters \u201c{name}\u201d.")
    return redirect("review:queue")


@require_GET
@login_required
@forbidden_as_page
def next_item(request: HttpRequest) -> HttpResponse:
    """Open the next (``dir=next``) or previous (``dir=prev``) item of the queue after task ``after``, with the
    queue's filters and order from the query string; the queue itself at either end."""
    review_queue_check(request.user)
    queue = review_queue_filtered(reviewer=request.user, params=request.GET)
    try:
        after = int(request.GET.get("after", ""))
    except ValueError:
        after = None
    step = -1 if request.GET.get("dir") == "prev" else 1
    found = review_queue_neighbour(queue=queue.tasks, user=request.user, after=after, step=step)
    query = queue.query
    if found is None:
        messages.info(request, "That was the last item of the queue." if step > 0 else "That was the first item.")
        return redirect(reverse("review:queue") + (f"?{query}" if query else ""))
    return redirect(reverse("review:task", args=[found]) + (f"?{query}" if query else ""))


@require_POST
@login_required
@forbidden_as_page
def claim_next(request: HttpRequest) -> HttpResponse:
    """Claim the first item of the (filtered) queue nobody else holds and open it: one step from the queue."""
    review_queue_check(request.user)
    queue = review_queue_filtered(reviewer=request.user, params=request.POST)
    tasks, query = queue.tasks, queue.query
    for _attempt in range(3):  # another reviewer may take the same one first: then the next
        task = review_queue_first_free(queue=tasks, user=request.user)
        if task is None:
            messages.info(request, "Nothing free to claim in the queue.")
            return redirect(reverse("review:queue") + (f"?{query}" if query else ""))
        try:
            task = review_claim(task=task, user=request.user)
        except ClaimUnavailable:
            continue
        messages.success(request, f"You hold “{task.title}” until {timezone.localtime(task.claim_expires_at):%H:%M}.")
        return redirect(reverse("review:task", args=[task.pk]) + (f"?{query}" if query else ""))
    messages.error(request, "Other reviewers took the free items first; try again.")
    return redirect("review:queue")


@require_POST
@login_required
@forbidden_as_page
def bulk_decide(request: HttpRequest) -> HttpResponse:
    """Approve or return the selected items, each through its own claim and decision (the gate still applies)."""
    review_queue_check(request.user)
    try:
        task_ids = [int(v) for v in request.POST.getlist("task")]
    except ValueError:
        task_ids = []
    try:
        outcomes = review_bulk_decide(
            task_ids=task_ids,
            user=request.user,
            decision=request.POST.get("decision", ""),
            comment=request.POST.get("comment", ""),
        )
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
    else:
        done = [o for o in outcomes if o.done and not o.sealed]
        sealed = [o for o in outcomes if o.done and o.sealed]
        verb = "Approved" if request.POST.get("decision") == ReviewDecision.APPROVE else "Returned"
        if done:
            messages.success(request, f"{verb} {len(done)} of {len(outcomes)}: " + ", ".join(o.title for o in done))
        if sealed:
            messages.success(
                request,
                f"First of two reviews given on {len(sealed)} of {len(outcomes)} (they stay in review, sealed until a "
                "second reviewer decides): " + ", ".join(o.title for o in sealed),
            )
        for refused in (o for o in outcomes if not o.done):
            messages.error(request, f"“{refused.title}” not decided: {refused.message}")
    kept = QueryDict(request.POST.get("query", ""))
    query = urlencode({name: kept[name] for name in QUEUE_FILTERS if kept.get(name)})
    return redirect(reverse("review:queue") + (f"?{query}" if query else ""))


# --- the author's own queue ---------------------------------------------------------------------------------------


@require_GET
@login_required
def mine(request: HttpRequest) -> HttpResponse:
    """The author's work: tasks sent back with changes requested (the reviewer's latest word) first, then drafts."""
    page = Paginator(author_queue(author=request.user), PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "review/mine.html", {"page": page})

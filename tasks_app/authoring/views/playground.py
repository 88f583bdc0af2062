"""The tool playground of a task: run any tool in a sandbox episode of the task's pinned snapshot, record calls
into a draft reference solution, save it as a new version, and run it against the rubric.

The sandbox episode and the draft live in the session, one per user and task, so nothing recorded is lost on a
bad input or a reload; "Reset sandbox" starts a fresh episode (the draft stays).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from corecraft_site.service_errors import error_lines
from tasks_app.authoring.criterion_editor import tool_choices
from tasks_app.authoring.selectors import reference_run_latest
from tasks_app.authoring.selectors_authoring import version_criteria
from tasks_app.authoring.services.reference_solution import reference_solution_run, reference_solution_validate
from tasks_app.authoring.services.tasks import EDITABLE_STATUSES, TaskConflict
from tasks_app.authoring.services.tasks import task_update as task_update_service
from tasks_app.authoring.tool_forms import tool_argument_fields, tool_arguments_from_post
from tasks_app.authoring.views.authoring import allowed, forbidden_as_page, task_or_404
from tasks_app.models import Task
from tasks_app.permissions import task_discuss_check, task_edit_check
from world_app.episodes import EpisodeClosed, EpisodeNotFound, episode_close, episode_create
from world_app.models import Episode
from world_app.selectors_lookup import LOOKUP_KINDS
from world_app.tools.registry import all_tools, get_tool
from world_app.tools.steps import call_tool

MAX_RECORDED_CALLS = 100


def _key(task: Task) -> str:
    return f"playground:{task.pk}"


def _state(request: HttpRequest, task: Task) -> dict[str, Any]:
    """This user's sandbox and draft for the task; the draft starts as the saved reference solution."""
    state = request.session.get(_key(task))
    if state is None:
        solution = task.current_version.reference_solution or {}
        state = {
            "episode": None,
            "calls": list(solution.get("calls", [])),
            "final_answer": solution.get("final_answer", ""),
        }
        request.session[_key(task)] = state
    return state


def _store(request: HttpRequest, task: Task, state: dict[str, Any]) -> None:
    request.session[_key(task)] = state
    request.session.modified = True


def _sandbox(request: HttpRequest, task: Task, state: dict[str, Any]) -> Episode:
    """The open sandbox episode on the task's pinned snapshot, made when missing, closed or on another snapshot."""
    snapshot_id = task.current_version.snapshot_id
    episode = None
    if state.get("episode"):
        episode = (
            Episode.objects.filter(pk=state["episode"], status=Episode.Status.OPEN, snapshot_id=snapshot_id)
            .only("pk", "snapshot_id", "status", "step_count")
            .first()
        )
    if episode is None:
        episode = episode_create(
            snapshot=task.current_version.snapshot,
            label=f"playground: task {task.pk}, user {request.user.pk}",
            # ask_user answers as the task's simulated user would, so a reference can record its questions.
            simulated_user=task.current_version.simulated_user,
        )
        state["episode"] = str(episode.pk)
        _store(request, task, state)
    return episode


def _draft_solution(state: dict[str, Any]) -> dict[str, Any]:
    return {"calls": state.get("calls", []), "final_answer": state.get("final_answer", "")}


def _context(request: HttpRequest, task: Task, state: dict[str, Any], **extra: Any) -> dict[str, Any]:
    saved = task.current_version.reference_solution or {}
    draft = _draft_solution(state)
    return {
        "task": task,
        "state": state,
        "draft": draft,
        "draft_calls": [
            {"index": i, "up": f"up:{i}", "tool": c["tool"], "arguments": json.dumps(c.get("arguments", {}))}
            for i, c in enumerate(draft["calls"])
        ],
        "unsaved": _normalised(draft) != _normalised(saved),
        "can_save": allowed(task_edit_check, request.user, task) and task.status in EDITABLE_STATUSES,
        "tools": tool_choices(),
        "lookup_kinds": LOOKUP_KINDS.values(),
        **extra,
    }


def _normalised(solution: dict) -> dict:
    return {"calls": solution.get("calls") or [], "final_answer": (solution.get("final_answer") or "").strip()}


def _tool_panel(tool, *, typed=None, errors=None, arguments_json: str = "") -> dict[str, Any]:
    return {
        "tool": tool,
        "fields": tool_argument_fields(tool, typed, errors) if tool else [],
        "arguments_json": arguments_json,
        "json_error": (errors or {}).get("arguments_json", ""),
        "has_nested": bool(tool) and any(f.widget == "json" for f in tool_argument_fields(tool)),
    }


def _run_rows(task: Task, run) -> list[dict[str, Any]]:
    if run is None:
        return []
    texts = {str(c.key): c.text for c in version_criteria(version=task.current_version)}
    return [{"verdict": v, "text": texts.get(v["key"], "(a criterion of another version)")} for v in run.verdicts]


@require_GET
@login_required
@forbidden_as_page
def playground_page(request: HttpRequest, task_id: int) -> HttpResponse:
    task = task_or_404(task_id)
    task_discuss_check(request.user, task)
    state = _state(request, task)
    tool = get_tool(request.GET.get("tool", "")) or all_tools()[0]
    run = reference_run_latest(version=task.current_version)
    context = _context(request, task, state, **_tool_panel(tool), run=run, run_rows=_run_rows(task, run))
    return render(request, "tasks/playground.html", context)


@require_GET
@login_required
@forbidden_as_page
def playground_form(request: HttpRequest, task_id: int) -> HttpResponse:
    """The chosen tool's form (htmx, when the tool select changes)."""
    task = task_or_404(task_id)
    task_discuss_check(request.user, task)
    tool = get_tool(request.GET.get("tool", "")) or all_tools()[0]
    return render(request, "tasks/playground.html#call", {"task": task, "tools": tool_choices(), **_tool_panel(tool)})


@require_POST
@login_required
@forbidden_as_page
def playground_call(request: HttpRequest, task_id: int) -> HttpResponse:
    """Run the tool in the sandbox; the form comes back as typed, with the result (or what was wrong)."""
    task = task_or_404(task_id)
    task_discuss_check(request.user, task)
    state = _state(request, task)
    tool = get_tool(request.POST.get("tool", ""))
    context: dict[str, Any] = {"task": task, "tools": tool_choices()}
    if tool is None:
        context.update(_tool_panel(all_tools()[0]), call_error="Choose a tool from the list.")
    else:
        arguments, errors, typed = tool_arguments_from_post(tool, request.POST)
        raw_json = request.POST.get("arguments_json", "")
        context.update(_tool_panel(tool, typed=typed, errors=errors, arguments_json=raw_json))
        if errors:
            context["call_error"] = "Fix the marked inputs; the tool was not run."
        else:
            episode = _sandbox(request, task, state)
            try:
                result = call_tool(episode, tool.name, arguments)
            except (EpisodeClosed, EpisodeNotFound):
                state["episode"] = None
                episode = _sandbox(request, task, state)
                result = call_tool(episode, tool.name, arguments)
            context.update(
                result=result,
                result_json=json.dumps(result, indent=2, default=str),
                is_error=isinstance(result, dict) and "error" in result,
                called={"tool": tool.name, "arguments": arguments},
                called_json=json.dumps(arguments),
                episode_id=str(episode.pk),
            )
    if request.htmx:
        return render(request, "tasks/playground.html#call", context)
    run = reference_run_latest(version=task.current_version)
    full = _context(request, task, state, run=run, run_rows=_run_rows(task, run))
    return render(request, "tasks/playground.html", {**full, **context})


def _draft_response(request: HttpRequest, task: Task, state: dict[str, Any], **extra: Any) -> HttpResponse:
    context = _context(request, task, state, **extra)
    if request.htmx:
        # the page around the draft names the current version twice: swapped out of band (both are always there)
        return render(request, "tasks/playground.html#draft", {**context, "oob_version": True})
    return redirect("tasks:playground", task.pk)


@require_POST
@login_required
@forbidden_as_page
def playground_record(request: HttpRequest, task_id: int) -> HttpResponse:
    """Append a call (tool + arguments as run) to the draft reference solution."""
    task = task_or_404(task_id)
    task_discuss_check(request.user, task)
    state = _state(request, task)
    tool = get_tool(request.POST.get("tool", ""))
    try:
        arguments = json.loads(request.POST.get("arguments", "{}"))
    except ValueError:
        arguments = None
    if tool is None or not isinstance(arguments, dict):
        return _draft_response(request, task, state, draft_error="That call could not be recorded; run it again.")
    if len(state["calls"]) >= MAX_RECORDED_CALLS:
        return _draft_response(
            request, task, state, draft_error=f"A solution holds at most {MAX_RECORDED_CALLS} calls."
        )
    state["calls"].append({"tool": tool.name, "arguments": arguments})
    _store(request, task, state)
    return _draft_response(request, task, state, draft_notice=f"Recorded call {len(state['calls'])}: {tool.name}.")


@require_POST
@login_required
@forbidden_as_page
def playground_draft(request: HttpRequest, task_id: int) -> HttpResponse:
    """Edit the draft: the final answer (always kept as typed), move or remove a call, discard, or save it as the
    task's reference solution (a new version)."""
    task = task_or_404(task_id)
    task_discuss_check(request.user, task)
    state = _state(request, task)
    if "final_answer" in request.POST:
        state["final_answer"] = request.POST["final_answer"]
    action = request.POST.get("action", "")
    verb, _, index_text = action.partition(":")
    calls = state["calls"]
    extra: dict[str, Any] = {}
    if index_text.isdigit() and int(index_text) < len(calls):
        index = int(index_text)
        if verb == "remove":
            calls.pop(index)
        elif verb == "up" and index > 0:
            calls[index - 1], calls[index] = calls[index], calls[index - 1]
        elif verb == "down" and index < len(calls) - 1:
            calls[index + 1], calls[index] = calls[index], calls[index + 1]
        extra["focus_action"] = action
    elif verb == "discard":
        solution = task.current_version.reference_solution or {}
        state["calls"] = list(solution.get("calls", []))
        state["final_answer"] = solution.get("final_answer", "")
        extra["draft_notice"] = "The draft is back to the saved reference solution."
    elif verb == "save":
        _store(request, task, state)
        task, outcome = _save(request, task, state)
        extra.update(outcome)
    _store(request, task, state)
    return _draft_response(request, task, state, **extra)


def _save(request: HttpRequest, task: Task, state: dict[str, Any]) -> tuple[Task, dict[str, Any]]:
    base = request.POST.get("base_revision", "")
    try:
        solution = reference_solution_validate(_draft_solution(state))
        saved = task_update_service(
            task=task,
            user=request.user,
            base_revision=int(base) if base.isdigit() else -1,
            reference_solution=solution,
        )
    except TaskConflict as exc:
        editor = exc.current_version.created_by.get_username() if exc.current_version else "someone"
        return task, {
            "draft_error": f"{editor} saved this task (version {exc.current_version.number}) after you opened it. "
            "Your draft is kept: reload the page to see their version, then save again."
        }
    except ValidationError as exc:
        return task, {"draft_error": "The draft can't be saved:", "draft_problems": error_lines(exc)}
    fresh = task_or_404(saved.pk)
    if fresh.current_version_id == task.current_version_id:
        return fresh, {"draft_notice": "Nothing changed: the saved reference solution is the same."}
    return fresh, {"draft_notice": f"Saved as the reference solution of version {fresh.current_version.number}."}


@require_POST
@login_required
@forbidden_as_page
def playground_reset(request: HttpRequest, task_id: int) -> HttpResponse:
    """A fresh sandbox episode; the draft stays."""
    task = task_or_404(task_id)
    task_discuss_check(request.user, task)
    state = _state(request, task)
    if state.get("episode"):
        with contextlib.suppress(EpisodeNotFound, EpisodeClosed):
            episode_close(state["episode"])
    state["episode"] = None
    episode = _sandbox(request, task, state)
    context = {"task": task, "state": state, "episode_id": str(episode.pk), "notice": "A fresh sandbox is ready."}
    if request.htmx:
        return render(request, "tasks/playground.html#sandbox", context)
    return redirect("tasks:playground", task.pk)


@require_POST
@login_required
@forbidden_as_page
def playground_run(request: HttpRequest, task_id: int) -> HttpResponse:
    """Run the saved reference solution in a fresh episode; every programmatic criterion's verdict at once."""
    task = task_or_404(task_id)
    try:
        run = reference_solution_run(version=task.current_version, user=request.user)
        context = {"task": task, "run": run, "run_rows": _run_rows(task, run)}
    except ValidationError as exc:
        context = {
            "task": task,
            "run": reference_run_latest(version=task.current_version),
            "run_error": " ".join(exc.messages),
        }
        context["run_rows"] = _run_rows(task, context["run"])
    if request.htmx:
        return render(request, "tasks/playground.html#run", context)
    return redirect("tasks:playground", task.pk)

"""A rubric checked against its reference and the reference's perturbed copies, on a snapshot: ``SnapshotReplay``
runs call lists in scratch episodes (shared by every check of one snapshot inside ``shared_replay``), and
``rubric_check`` says whether the reference passes and which copies the rubric fails to catch."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from corecraft_site.canonical import sorted_json
from rubrics_app.judgement import OPEN_WORLD, Judgement, RubricCriterion, Trajectory, rubric_of, trajectory_judge
from tasks_app.perturbations.faults import DROP_FACT, Perturbation, reference_perturbations
from world_app.conversation import simulated_user_bound
from world_app.episodes import episode_close, episode_create, episode_world, episode_world_diff
from world_app.routers import EPISODE_ALIAS
from world_app.tools.registry import CONVERSATION_GROUP, get_tool, invoke_tool
from world_app.tools.steps import call_tool

# --- checking a rubric against its reference and the perturbed copies ------------------------------------------


@dataclass
class RubricCheck:
    """How a rubric judges its reference solution and the single-fault copies of it.

    ``reference_passes``: every programmatic criterion is met by the reference (``llm`` criteria cannot be judged
    offline and are left out). A perturbed copy is *detected* when at least one programmatic criterion it meets
    less than the reference does goes unmet; ``blind`` means copies were made and none was detected (a task
    whose reference has no real fault to make, e.g. an answer of policy text only, is not blind).
    """

    reference_passes: bool
    unmet: list[str]
    call_errors: list[str]
    detected: list[str]
    undetected: list[str]
    reference_judgement: Judgement | None = None

    @property
    def blind(self) -> bool:
        return bool(self.undetected) and not self.detected


def _criterion_rows(criteria: list[dict]) -> list[RubricCriterion]:
    return rubric_of(criteria)


def _run_calls(snapshot, calls: list[dict], label: str, simulated_user: dict | None = None):
    """A new episode with ``calls`` made in it; the episode, the calls' errors and their results."""
    episode = episode_create(snapshot=snapshot, label=label, simulated_user=simulated_user)
    errors, results = [], []
    for index, call in enumerate(calls):
        result = call_tool(episode, call["tool"], call.get("arguments") or {})
        results.append(result)
        if isinstance(result, dict) and "error" in result:
            message = result["error"].get("message", "") if isinstance(result["error"], dict) else result["error"]
            errors.append(f"calls[{index}] {call['tool']}: {message}")
    return episode, errors, results


def _call_dicts(calls: list[dict], results: list) -> list[dict]:
    return [
        {"name": call["tool"], "arguments": call.get("arguments") or {}, "result": result,
         "is_error": isinstance(result, dict) and "error" in result}
        for call, result in zip(calls, results, strict=True)
    ]  # fmt: skip


def _unmet_of(judgement: Judgement) -> set[int]:
    return {i for i, v in enumerate(judgement.verdicts) if v["status"] == "not_met"}


def _judged(rows, episode, answer: str, *, snapshot, calls: list[dict], results: list, instruction: str) -> Judgement:
    trajectory = Trajectory.of(
        instruction=instruction,
        snapshot_version=snapshot.version,
        tool_calls=_call_dicts(calls, results),
        final_answer=answer,
        episode=episode,
        simulated_user=episode.simulated_user,
    )
    return trajectory_judge(rubric=rows, trajectory=trajectory)


class SnapshotReplay:
    """Replays call lists in one scratch episode of a snapshot, each in a savepoint rolled back afterwards.

    The tools run exactly as in an episode (the snapshot's rows and clock) but nothing is logged: each trajectory
    is judged by ``trajectory_judge`` in the world the calls left (``OPEN_WORLD``), its calls as the steps. Hundreds of
    perturbed copies cost milliseconds each instead of an episode (and its logged steps) each. Use it as a
    context manager.
    """

    def __init__(self, snapshot):
        self.snapshot = snapshot
        # Who answers ``ask_user`` in the calls replayed now (the task's simulated user; {}: no one).
        self.simulated_user: dict = {}

    @contextmanager
    def user_bound(self, simulated_user: dict | None) -> Iterator[None]:
        """Inside the block, replayed calls are answered (``ask_user``) and judged as the task of that simulated
        user's: one replay serves many tasks, each with its own user."""
        before = self.simulated_user
        self.simulated_user = dict(simulated_user or {})
        try:
            yield
        finally:
            self.simulated_user = before

    def __enter__(self) -> SnapshotReplay:
        self.episode = episode_create(snapshot=self.snapshot, label="rubric check (replay)")
        self._world = episode_world(self.episode)
        self._world.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._world.__exit__(*exc)
        finally:
            episode_close(self.episode)

    def results(self, calls: list[dict]) -> list:
        """The results of ``calls`` made in order on the snapshot (rolled back afterwards)."""
        return self._play(calls)[0]

    def diff(self, calls: list[dict]) -> dict:
        """The diff (``episode_diff``'s shape) that ``calls`` made in order leave on the snapshot (rolled back)."""
        found: list[dict] = []
        self._play(calls, lambda results: found.append(episode_world_diff()))
        return found[0]

    def judgements(
        self, rows: list, calls: list[dict], answers: list[str], *, instruction: str = ""
    ) -> tuple[list[Judgement], list, list[str]]:
        """For each answer, ``trajectory_judge``'s judgement after ``calls``, made in the replayed world
        (``OPEN_WORLD``) before it is rolled back: the same judgement, hash and verdict cache as a logged episode
        of the same calls. Also the calls' results and errors."""
        judgements: list[Judgement] = []

        def judge(results: list) -> None:
            tool_calls = _call_dicts(calls, results)
            for answer in answers:
                trajectory = Trajectory.of(
                    instruction=instruction,
                    snapshot_version=self.snapshot.version,
                    tool_calls=tool_calls,
                    final_answer=answer or "",
                    episode=OPEN_WORLD,
                    simulated_user=self.simulated_user,
                )
                judgements.append(trajectory_judge(rubric=rows, trajectory=trajectory))

        results, errors = self._play(calls, judge)
        return judgements, results, errors

    def verdicts(
        self, rows: list, calls: list[dict], answers: list[str], *, instruction: str = ""
    ) -> tuple[list[list[dict]], list, list[str]]:
        """For each answer, the verdict of every criterion after ``calls`` (``llm`` ones pending); the calls'
        results and errors."""
        judgements, results, errors = self.judgements(rows, calls, answers, instruction=instruction)
        return [j.verdicts for j in judgements], results, errors

    def _play(self, calls: list[dict], then=None) -> tuple[list, list[str]]:
        """Make ``calls`` in a savepoint, run ``then(results)`` in the world they left, and roll it all back."""
        from django.db import transaction

        memo = self.__dict__.setdefault("_reads", {})
        with transaction.atomic(using=EPISODE_ALIAS), simulated_user_bound(self.simulated_user):
            errors, results = [], []
            pristine = True  # no write yet: a read returns what it returns on the snapshot (memoised)
            for index, call in enumerate(calls):
                found = get_tool(call["tool"])
                if found is None or found.group == "write":
                    pristine = False
                # A question's reply is the task's user's, not the snapshot's: never shared between tasks.
                shared = pristine and found is not None and found.group != CONVERSATION_GROUP
                key = sorted_json([call["tool"], call.get("arguments") or {}])
                if shared and key in memo:
                    result = memo[key]
                else:
                    result = invoke_tool(call["tool"], call.get("arguments") or {})
                    if shared and len(memo) < 20_000:
                        memo[key] = result
                results.append(result)
                if isinstance(result, dict) and "error" in result:
                    message = result["error"].get("message", "") if isinstance(result["error"], dict) else result
                    errors.append(f"calls[{index}] {call['tool']}: {message}")
            if then is not None:
                then(results)
            transaction.set_rollback(True, using=EPISODE_ALIAS)
        return results, errors

    def unmet(
        self, rows: list, calls: list[dict], answers: list[str], *, instruction: str = ""
    ) -> tuple[list[set[int]], list[str]]:
        """For each answer, the indexes of the criteria not met after ``calls``; and the calls' errors."""
        judgements, results, errors = self.judgements(rows, calls, answers, instruction=instruction)
        self.last_results = results
        self.last_judgements = judgements
        return [_unmet_of(j) for j in judgements], errors


class _SharedReplay:
    """A ``SnapshotReplay`` opened on first use (a block that never needs it opens no scratch world)."""

    def __init__(self, snapshot):
        self.snapshot = snapshot
        self.replay: SnapshotReplay | None = None

    def get(self) -> SnapshotReplay:
        if self.replay is None:
            self.replay = SnapshotReplay(self.snapshot).__enter__()
        return self.replay

    def close(self, *exc) -> None:
        if self.replay is not None:
            self.replay.__exit__(*exc)
            self.replay = None


_SHARED_REPLAY: ContextVar[_SharedReplay | None] = ContextVar("shared_snapshot_replay", default=None)


@contextmanager
def shared_replay(snapshot) -> Iterator[None]:
    """Inside the block ``shared_replay_for`` hands out one ``SnapshotReplay`` of ``snapshot``, opened on first use:
    checking many task versions of one snapshot (planning a red-team run, loading a library) opens one scratch
    world, not one each, and none when nothing needs one."""
    shared = _SharedReplay(snapshot)
    token = _SHARED_REPLAY.set(shared)
    try:
        yield
    finally:
        _SHARED_REPLAY.reset(token)
        shared.close(None, None, None)


def shared_replay_for(snapshot_id: int) -> SnapshotReplay | None:
    """The shared replay of the enclosing ``shared_replay`` block when it is of that snapshot."""
    shared = _SHARED_REPLAY.get()
    return shared.get() if shared is not None and shared.snapshot.pk == snapshot_id else None


def rubric_check(
    *, criteria: list[dict], solution: dict, snapshot=None, replay: SnapshotReplay | None = None,
    exhaustive: bool = False, instruction: str = "", simulated_user: dict | None = None,
) -> RubricCheck:  # fmt: skip
    """Judge ``solution`` and its perturbed copies by the programmatic criteria on ``snapshot``, the task's
    ``simulated_user`` answering its questions (``ask_user``).

    With ``replay`` (a ``SnapshotReplay`` of the snapshot), calls are replayed in its scratch world (fast, for
    checking many tasks); otherwise each call list runs in a real episode, logged, as a reference run does.
    The perturbations get the reference's results (see ``reference_perturbations``). Copies that only change the
    final answer reuse the reference's calls. Without ``exhaustive`` the copies stop at the first one detected
    (what "the rubric is not blind" needs); with it every copy is judged.
    """
    rows = _criterion_rows(criteria)
    calls = [{"tool": c["tool"], "arguments": c.get("arguments") or {}} for c in solution.get("calls") or []]
    answer = solution.get("final_answer") or ""
    if replay is not None:
        with replay.user_bound(simulated_user):
            return _rubric_check(rows, calls, answer, replay=replay, snapshot=snapshot, exhaustive=exhaustive,
                                 instruction=instruction, simulated_user=simulated_user)  # fmt: skip
    return _rubric_check(rows, calls, answer, replay=None, snapshot=snapshot, exhaustive=exhaustive,
                         instruction=instruction, simulated_user=simulated_user)  # fmt: skip


def _rubric_check(
    rows, calls: list[dict], answer: str, *, replay: SnapshotReplay | None, snapshot, exhaustive: bool,
    instruction: str, simulated_user: dict | None,
) -> RubricCheck:  # fmt: skip
    detected, undetected = [], []
    if replay is not None:
        replayer, differ = replay.results, replay.diff
    else:

        def replayer(some_calls: list[dict]) -> list:
            with SnapshotReplay(snapshot) as scratch, scratch.user_bound(simulated_user):
                return scratch.results(some_calls)

        def differ(some_calls: list[dict]) -> dict:
            with SnapshotReplay(snapshot) as scratch, scratch.user_bound(simulated_user):
                return scratch.diff(some_calls)

    def judge(perturbation: Perturbation, unmet: set[int], base: set[int]) -> None:
        (detected if unmet - base else undetected).append(perturbation.key)

    def ordered(results: list) -> tuple[list[Perturbation], list[Perturbation]]:
        found = reference_perturbations(
            {"calls": calls, "final_answer": answer}, results=results, replay=replayer, instruction=instruction,
            world_diff=differ,
        )  # fmt: skip
        # Answer-only faults first: they need no replay of the calls.
        found.sort(key=lambda p: p.kind != DROP_FACT)
        return [p for p in found if p.solution["calls"] == calls], [p for p in found if p.solution["calls"] != calls]

    if replay is not None:
        (base_unmet,), call_errors = replay.unmet(rows, calls, [answer], instruction=instruction)
        reference_judgement = replay.last_judgements[0]
        same_calls, other = ordered(replay.last_results)
        answers = [p.solution["final_answer"] for p in same_calls]
        unmet_sets, _ = replay.unmet(rows, calls, answers, instruction=instruction)
        for perturbation, unmet in zip(same_calls, unmet_sets, strict=True):
            judge(perturbation, unmet, base_unmet)
        for perturbation in other:
            if detected and not exhaustive:
                break
            copy_calls, copy_answer = perturbation.solution["calls"], perturbation.solution["final_answer"]
            (unmet,), _ = replay.unmet(rows, copy_calls, [copy_answer], instruction=instruction)
            judge(perturbation, unmet, base_unmet)
    else:
        episode, call_errors, results = _run_calls(snapshot, calls, "rubric check: reference", simulated_user)
        try:
            reference_judgement = _judged(
                rows, episode, answer, snapshot=snapshot, calls=calls, results=results, instruction=instruction
            )
            base_unmet = _unmet_of(reference_judgement)
            same_calls, other = ordered(results)
            for perturbation in same_calls:
                copy_answer = perturbation.solution["final_answer"]
                unmet = _unmet_of(
                    _judged(
                        rows, episode, copy_answer, snapshot=snapshot, calls=calls, results=results,
                        instruction=instruction,
                    )
                )  # fmt: skip
                judge(perturbation, unmet, base_unmet)
        finally:
            episode_close(episode)
        for perturbation in other:
            if detected and not exhaustive:
                break
            label = f"rubric check: {perturbation.key}"
            copy_calls, copy_answer = perturbation.solution["calls"], perturbation.solution["final_answer"]
            copy_episode, _, copy_results = _run_calls(snapshot, copy_calls, label, simulated_user)
            try:
                unmet = _unmet_of(
                    _judged(
                        rows, copy_episode, copy_answer, snapshot=snapshot, calls=copy_calls, results=copy_results,
                        instruction=instruction,
                    )
                )  # fmt: skip
                judge(perturbation, unmet, base_unmet)
            finally:
                episode_close(copy_episode)
    if not exhaustive and detected:
        undetected = [k for k in undetected if k not in detected]
    return RubricCheck(
        reference_passes=not base_unmet,
        unmet=[rows[i].text for i in sorted(base_unmet)],
        call_errors=call_errors,
        detected=detected,
        undetected=undetected,
        reference_judgement=reference_judgement,
    )

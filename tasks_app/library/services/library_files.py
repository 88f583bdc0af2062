"""The library's files: reading the fixture files of the starter library and validating a task as the library
defines it (a fixture file or a family instance, ``library_task_validate``) before anything is loaded.

Every problem names its file (or instance) and its field; a file that fails is reported, never half-loaded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from django.core.exceptions import ValidationError

from corecraft_site.service_errors import error_lines
from rubrics_app.criteria import criteria_validate, criterion_content_hash
from tasks_app.authoring.services.reference_solution import reference_solution_validate
from tasks_app.models import Difficulty, TaskType
from world_app.contract import CONVERSATION_TOOLS
from world_app.conversation import SimulatedUserInvalid, facts_disclosed, simulated_user_validate

STARTER_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "starter_tasks"  # tasks_app/fixtures/starter_tasks
REQUIRED_FIELDS = ("key", "title", "task_type", "difficulty", "instruction", "criteria", "reference_solution")
OPTIONAL_FIELDS = ("family", "tags", "reviewer_notes", "simulated_user")
KEY = re.compile(r"^[a-z0-9][a-z0-9_-]{1,150}$")


class TaskLibraryError(ValidationError):
    """The library cannot be loaded at all (no snapshot, no directory)."""


@dataclass(frozen=True)
class LibraryTask:
    """A task as the library defines it (validated): what ``task_create`` takes, plus its source key."""

    source_key: str
    fields: dict
    criteria: list[dict]

    def criteria_hashes(self) -> list[str]:
        return [criterion_content_hash(**{k: c[k] for k in _HASHED}) for c in self.criteria]


_HASHED = ("kind", "text", "spec", "weight", "category", "required")


def library_task_validate(data: Any, *, source_key: str | None = None, where: str) -> LibraryTask:
    """Check one task definition; raise ValidationError with every problem as ``<where>: <field>: why``."""
    if not isinstance(data, dict):
        raise ValidationError([f"{where}: a task must be a mapping of fields"])
    problems = []
    unknown = sorted(set(data) - set(REQUIRED_FIELDS) - set(OPTIONAL_FIELDS))
    if unknown:
        problems.append(f"{where}: {', '.join(unknown)}: unknown field(s); the fields are "
                        f"{', '.join(REQUIRED_FIELDS + OPTIONAL_FIELDS)}")  # fmt: skip
    for name in REQUIRED_FIELDS:
        if name not in data or data[name] in (None, ""):
            problems.append(f"{where}: {name}: required")
    key = str(data.get("key") or "")
    if key and not KEY.match(key):
        problems.append(f"{where}: key: lowercase letters, digits, '-' and '_' only (got {key!r})")
    if data.get("task_type") and data["task_type"] not in TaskType.values:
        problems.append(f"{where}: task_type: one of {', '.join(TaskType.values)}")
    if data.get("difficulty") and data["difficulty"] not in Difficulty.values:
        problems.append(f"{where}: difficulty: one of {', '.join(Difficulty.values)}")
    tags = data.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) and t.strip() for t in tags):
        problems.append(f"{where}: tags: a list of non-empty texts")
    criteria: list[dict] = []
    if isinstance(data.get("criteria"), list):
        try:
            criteria = [
                {
                    "kind": str(c.kind),
                    "text": c.text,
                    "spec": c.spec,
                    "weight": c.weight,
                    "category": str(c.category),
                    "required": c.required,
                }
                for c in criteria_validate(data["criteria"])
            ]
        except ValidationError as exc:
            problems.extend(f"{where}: {m}" for m in error_lines(exc))
        if not data["criteria"]:
            problems.append(f"{where}: criteria: at least one criterion")
    elif "criteria" in data:
        problems.append(f"{where}: criteria: must be a list")
    solution: dict = {}
    if data.get("reference_solution") is not None:
        try:
            solution = reference_solution_validate(data["reference_solution"])
        except ValidationError as exc:
            problems.extend(f"{where}: {m}" for m in error_lines(exc))
    user: dict = {}
    try:
        user = simulated_user_validate(data.get("simulated_user"))
    except SimulatedUserInvalid as exc:
        problems.extend(f"{where}: {path}: {why}" for path, whys in exc.problems.items() for why in whys)
    problems.extend(f"{where}: {m}" for m in _conversation_problems(user, criteria, solution))
    if problems:
        raise ValidationError(problems)
    fields = {
        "title": str(data["title"]).strip(),
        "task_type": data["task_type"],
        "difficulty": data["difficulty"],
        "family": str(data.get("family") or "").strip(),
        "tags": sorted({t.strip() for t in tags}),
        "instruction": str(data["instruction"]).strip(),
        "reviewer_notes": str(data.get("reviewer_notes") or "").strip(),
        "reference_solution": solution,
        "simulated_user": user,
    }
    return LibraryTask(source_key=source_key or f"starter:{key}", fields=fields, criteria=criteria)


def _conversation_problems(user: dict, criteria: list[dict], solution: dict) -> list[str]:
    """A scripted user's facts against the criteria that name them and the reference's questions: every fact a
    criterion names is the user's, and every fact a criterion requires the reference actually asks for."""
    problems = []
    asks = [c for c in solution.get("calls") or [] if c.get("tool") in CONVERSATION_TOOLS]
    if asks and not user:
        problems.append("reference_solution: it asks the user (ask_user) but there is no simulated_user to answer")
    facts = {f["key"] for f in (user or {}).get("facts", [])}
    asked = {k for c in asks for k in facts_disclosed(user, str((c.get("arguments") or {}).get("message", "")))}
    for index, criterion in enumerate(criteria):
        spec = criterion.get("spec") or {}
        if criterion.get("kind") != "tool_call" or spec.get("expect") != "asked":
            continue
        fact = spec.get("fact")
        if fact not in facts:
            problems.append(f"criteria[{index}].spec.fact: {fact!r} is no fact of the simulated_user "
                            f"({', '.join(sorted(facts)) or 'there is none'})")  # fmt: skip
        elif fact not in asked:
            problems.append(f"criteria[{index}].spec.fact: the reference never asks for {fact!r} (no ask_user "
                            "message of it mentions one of the fact's topics)")  # fmt: skip
    return problems


def starter_files(path: Path | str | None = None) -> list[Path]:
    """Every fixture file under ``path`` (default: the starter library), sorted."""
    root = Path(path) if path else STARTER_DIR
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise TaskLibraryError(f"path: {root} is not a directory of task files")
    return sorted(p for p in root.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def starter_tasks_read(path: Path | str | None = None) -> tuple[list[LibraryTask], list[str]]:
    """The valid tasks of every fixture file, and the problems of the others (each naming its file)."""
    files = starter_files(path)
    base = Path(path) if path and Path(path).is_dir() else (STARTER_DIR if path is None else Path(path).parent)
    tasks, errors, seen = [], [], {}
    for file in files:
        where = str(file.relative_to(base)) if file.is_relative_to(base) else str(file)
        try:
            data = yaml.safe_load(file.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            errors.append(f"{where}: not valid YAML: {' '.join(str(exc).split())}")
            continue
        try:
            task = library_task_validate(data, where=where)
        except ValidationError as exc:
            errors.extend(exc.messages)
            continue
        if task.source_key in seen:
            errors.append(
                f"{where}: key: {task.source_key.removeprefix('starter:')!r} is also the key of {seen[task.source_key]}"
            )
            continue
        seen[task.source_key] = where
        tasks.append(task)
    return tasks, errors

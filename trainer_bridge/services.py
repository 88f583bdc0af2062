"""Writes of the trainer bridge: API tokens and releases (create, freeze). Export jobs are ``export_jobs``."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError as PydanticValidationError

from corecraft_site.canonical import canonical_json, canonical_sha256
from tasks_app.models import Task, TaskVersion
from trainer_bridge import release_candidates, splits
from trainer_bridge.authentication import secret_digest, token_cache_forget
from trainer_bridge.models import ApiToken, Release, ReleaseStatus, Scope, Split
from trainer_bridge.release_content import (
    _row_checksum,
    _row_pk,
    _rows_copy,
    _split_checksum,
    _unclashing,
    _versions_content,
)
from world_app.contract import agent_contract

TOKEN_PREFIX = "cc_"  # noqa: S105 (a marker, not a secret)


@dataclass(frozen=True)
class IssuedToken:
    """A new token and its secret; the secret exists only here, once."""

    token: ApiToken
    secret: str


def scopes_clean(scopes) -> list[str]:
    """Known scopes, deduplicated in the canonical order; anything else is a ValidationError."""
    if isinstance(scopes, str):
        scopes = [part.strip() for part in scopes.split(",") if part.strip()]
    if not isinstance(scopes, list | tuple | set) or not scopes:
        raise ValidationError({"scopes": ["Give at least one scope."]})
    unknown = sorted({str(s) for s in scopes} - set(Scope.values))
    if unknown:
        raise ValidationError({"scopes": [f"Unknown scopes: {', '.join(unknown)}. Known: {', '.join(Scope.values)}."]})
    return [scope for scope in Scope.values if scope in set(scopes)]


@transaction.atomic
def api_token_create(*, name: str, scopes, created_by) -> IssuedToken:
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": ["Name the token (who or what uses it)."]})
    if len(name) > 100:
        raise ValidationError({"name": ["At most 100 characters."]})
    clean = scopes_clean(scopes)
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        name=name, prefix=secret[:11], secret_sha256=secret_digest(secret), scopes=clean, created_by=created_by
    )
    return IssuedToken(token=token, secret=secret)


@transaction.atomic
def api_token_revoke(*, token: ApiToken) -> ApiToken:
    """Revoke (idempotent: a revoked token keeps its first revocation time)."""
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    token.refresh_from_db(fields=["revoked_at"])
    # This process refuses it at once; every other one within API_TOKEN_CACHE_MS (its token cache).
    token_cache_forget(token)
    return token


# --- releases ------------------------------------------------------------------------------------------------------

ROW_BATCH = 1000


# The project's one canonical JSON (release checksums are made of it); ``sha256_of`` kept as its name here.
sha256_of = canonical_sha256


def _clean_release_input(
    *, slug: str, name: str, seed, filters: dict, sizes: dict, editing: Release | None = None
) -> dict:
    errors: dict[str, list[str]] = {}
    slug = (slug or "").strip()
    if not slug or not re.fullmatch(r"[-a-zA-Z0-9_]+", slug) or len(slug) > 80:
        errors["slug"] = ["Letters, digits, hyphens and underscores only (at most 80)."]
    elif Release.objects.filter(slug=slug).exclude(pk=editing.pk if editing else None).exists():
        errors["slug"] = ["A release with this slug exists."]
    name = (name or "").strip() or slug
    if len(name) > 200:
        errors["name"] = ["At most 200 characters."]
    try:
        seed = int(seed)
        if not -(2**63) < seed < 2**63:
            raise ValueError
    except (TypeError, ValueError):
        errors["seed"] = ["A whole number."]
    parsed_filters = parsed_sizes = None
    try:
        parsed_filters = splits.filters_parse(filters)
    except PydanticValidationError as exc:
        errors["filters"] = [_pydantic_message(exc)]
    try:
        parsed_sizes = splits.sizes_parse(sizes)
    except PydanticValidationError as exc:
        errors["sizes"] = [_pydantic_message(exc)]
    if errors:
        raise ValidationError(errors)
    return {
        "slug": slug,
        "name": name,
        "seed": seed,
        "filters": parsed_filters.model_dump(exclude_defaults=True),
        "sizes": parsed_sizes.as_json(),
    }


def _pydantic_message(exc: PydanticValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ()))
        message = error.get("msg", "invalid").removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


@transaction.atomic
def release_create(*, slug: str, name: str = "", seed=0, filters: dict | None = None, sizes: dict, user) -> Release:
    """A draft release: what to choose and how to split it (nothing chosen until it is frozen)."""
    clean = _clean_release_input(slug=slug, name=name, seed=seed, filters=filters or {}, sizes=sizes)
    return Release.objects.create(created_by=user, status=ReleaseStatus.DRAFT, **clean)


@transaction.atomic
def release_update_draft(
    *, release: Release, slug: str, name: str = "", seed=0, filters: dict | None = None, sizes: dict, user
) -> Release:
    """Change a draft's slug, name, seed, filters or sizes (a draft holds no rows: nothing else to redo).

    Raises ValidationError once the release is frozen: a frozen release is never changed (make a new draft)."""
    locked = Release.objects.select_for_update().get(pk=release.pk)  # a freeze in flight waits, or wins
    if locked.status != ReleaseStatus.DRAFT:
        raise ValidationError({"status": ["A frozen release is never changed; make a new draft instead."]})
    clean = _clean_release_input(slug=slug, name=name, seed=seed, filters=filters or {}, sizes=sizes, editing=locked)
    for field, value in clean.items():
        setattr(locked, field, value)
    locked.save(update_fields=[*clean.keys()])
    return locked


@dataclass(frozen=True)
class ReleaseOutcome:
    """What freezing a draft would do now, for the confirmation that says so."""

    train: int
    holdout: int
    snapshot_versions: list[int]
    left_out_flagged: int  # approved tasks the gate flags, left out (the filter's default)
    error: str = ""


def release_freeze_outcome(*, release: Release) -> ReleaseOutcome:
    """The counts the draft would freeze to now, and how many flagged tasks it leaves out."""
    try:
        plan = release_preview(release=release)
    except splits.SplitError as exc:
        return ReleaseOutcome(0, 0, [], 0, error=str(exc))
    chosen = [*plan.train, *plan.holdout]
    snapshots = sorted(
        set(
            TaskVersion.objects.filter(pk__in=[c.version_id for c in chosen]).values_list(
                "snapshot__version", flat=True
            )
        )
    )
    left_out = release_flagged_left_out(release=release, plan=plan)
    return ReleaseOutcome(len(plan.train), len(plan.holdout), snapshots, left_out)


def release_flagged_left_out(*, release: Release, plan: splits.SplitPlan) -> int:
    """Approved tasks that pass the draft's other filters but are left out because the gate flags them (0 when
    the draft includes flagged tasks). ``plan``: the draft's preview (its qualifying tasks)."""
    filters = splits.filters_parse(release.filters)
    if filters.include_flagged:
        return 0
    qualifying = len(plan.train) + len(plan.holdout) + len(plan.excluded)
    return len(release_candidates.candidates_select(filters.model_copy(update={"include_flagged": True}))) - qualifying


def release_preview(*, release: Release) -> splits.SplitPlan:
    """The split the release would freeze to now (raises SplitError when the sizes cannot be met)."""
    return release_candidates.release_plan(filters=release.filters, sizes=release.sizes, seed=release.seed)


@transaction.atomic
def release_freeze(*, release: Release, user=None) -> Release:
    """Choose and split the tasks now, copy each chosen version's content into rows, write the manifest, freeze.

    Raises ValidationError when the release is frozen already or the sizes cannot be met.
    """
    release = Release.objects.select_for_update().get(pk=release.pk)
    if release.status == ReleaseStatus.FROZEN:
        raise ValidationError({"status": ["This release is frozen already."]})
    try:
        plan = release_candidates.release_plan(filters=release.filters, sizes=release.sizes, seed=release.seed)
    except splits.SplitError as exc:
        raise ValidationError({"sizes": [str(exc)]}) from None

    contract = agent_contract()
    tools = contract.tool_list()
    tool_names = [schema["function"]["name"] for schema in tools]
    split_checksums: dict[str, list[str]] = {Split.TRAIN: [], Split.HOLDOUT: []}
    snapshot_versions: set[int] = set()
    for split_name, chosen in ((Split.TRAIN, plan.train), (Split.HOLDOUT, plan.holdout)):
        for start in range(0, len(chosen), ROW_BATCH):
            batch = chosen[start : start + ROW_BATCH]
            contents = _versions_content([c.version_id for c in batch], tool_names=tool_names)
            rows = []
            for offset, candidate in enumerate(batch):
                content = contents[candidate.version_id]
                columns = content.pop("_row")
                content_json = canonical_json(content)
                checksum = _row_checksum(
                    task_key=candidate.key, version_id=candidate.version_id, split=split_name.value,
                    content_json=content_json,
                )  # fmt: skip
                split_checksums[split_name].append(checksum)
                snapshot_versions.add(content["snapshot_version"])
                row_pk = _row_pk(release.slug, candidate.key)
                rows.append(
                    (row_pk, release.pk, split_name.value, start + offset, candidate.task_id, candidate.version_id,
                     candidate.key, columns["task_type"], columns["difficulty"], columns["family"],
                     content_json, checksum)
                )  # fmt: skip
            _rows_copy(_unclashing(rows, release.slug))

    splits_info = {
        name: {"count": len(sums), "checksum": _split_checksum(sums)} for name, sums in split_checksums.items()
    }
    tools_sha256 = sha256_of(tools)
    release.checksum = sha256_of(
        {"train": splits_info[Split.TRAIN]["checksum"], "holdout": splits_info[Split.HOLDOUT]["checksum"],
         "tools": tools_sha256}
    )  # fmt: skip
    strata = []
    for stratum in plan.strata():
        for split_name in (Split.TRAIN, Split.HOLDOUT):
            strata.append(
                {
                    "task_type": stratum["task_type"],
                    "difficulty": stratum["difficulty"],
                    "split": split_name.value,
                    "count": stratum[split_name.value],
                    "target": stratum[f"{split_name.value}_target"],
                }
            )
    release.tools = tools
    release.contract_version = contract.version
    release.contract = contract.frozen()
    release.manifest = {
        "format": 1,
        "seed": release.seed,
        "filters": release.filters,
        "sizes": release.sizes,
        "splits": splits_info,
        "strata": strata,
        "snapshot_versions": sorted(snapshot_versions),
        "tools_sha256": tools_sha256,
        "contract_version": contract.version,
        "row_checksum": "sha256 of canonical JSON {task_key, version_id, split, content}",
        "split_checksum": "sha256 of the split's row checksums in position order, newline-joined",
        "units": plan.units,
        "excluded": len(plan.excluded),
    }
    release.status = ReleaseStatus.FROZEN
    release.frozen_at = timezone.now()
    release.save(update_fields=["tools", "contract_version", "contract", "manifest", "checksum", "status", "frozen_at"])
    # From now on these tasks, their rubrics and episodes are for eval:read only, on every page and API.
    Task.objects.filter(release_rows__release=release, release_rows__split=Split.HOLDOUT).update(held_out=True)
    return release


@transaction.atomic
def release_delete_draft(*, release: Release) -> None:
    if release.status != ReleaseStatus.DRAFT:
        raise ValidationError({"status": ["A frozen release is never deleted."]})
    release.delete()

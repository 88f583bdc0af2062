"""Forms of the authoring pages: the task list's filters and the task editor's fields.

The editor's criteria are edited by ``tasks_app.authoring.criterion_draft`` and ``criterion_editor``; the tool
playground's per-tool forms are ``tasks_app.authoring.tool_forms``.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from corecraft_site.service_errors import error_fields
from tasks_app.authoring.selectors_authoring import snapshots_for_choice, task_authors
from tasks_app.calibration.selectors import FLAG_FILTERS, SORTS
from tasks_app.models import Difficulty, TaskStatus, TaskType


class TaskFilterForm(forms.Form):
    q = forms.CharField(required=False, label="Search", max_length=200)
    status = forms.ChoiceField(required=False, choices=[("", "Any status"), *TaskStatus.choices])
    task_type = forms.ChoiceField(required=False, label="Type", choices=[("", "Any type"), *TaskType.choices])
    difficulty = forms.ChoiceField(required=False, choices=[("", "Any expected difficulty"), *Difficulty.choices])
    family = forms.CharField(required=False, max_length=100)
    author = forms.ModelChoiceField(
        required=False, queryset=task_authors(), empty_label="Anyone", to_field_name="username"
    )
    flag = forms.ChoiceField(required=False, label="Calibration", choices=list(FLAG_FILTERS.items()))
    sort = forms.ChoiceField(required=False, choices=[(k, label) for k, (label, _) in SORTS.items()])

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["author"].queryset = task_authors()

    def filters(self) -> dict[str, Any]:
        """The selector's keyword arguments; an invalid filter is ignored (the form shows its error), the rest apply."""
        self.is_valid()
        data = self.cleaned_data
        author = data.get("author")
        return {
            "query": data.get("q") or "",
            "status": data.get("status") or "",
            "task_type": data.get("task_type") or "",
            "difficulty": data.get("difficulty") or "",
            "family": data.get("family") or "",
            "author_id": author.pk if author else None,
        }

    def calibration(self) -> dict[str, str]:
        """``tasks_calibrated``'s keyword arguments (flag, sort); an invalid one is ignored."""
        self.is_valid()
        return {"flag": self.cleaned_data.get("flag") or "", "sort": self.cleaned_data.get("sort") or ""}


class SnapshotChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj) -> str:
        note = f" — {obj.note}" if obj.note else ""
        return f"World v{obj.version}{note} ({obj.created_at:%Y-%m-%d})"


class TaskForm(forms.Form):
    """The task's own fields; ``base_revision`` is the revision the editor opened (stale = conflict)."""

    base_revision = forms.IntegerField(required=False, widget=forms.HiddenInput)
    base_version = forms.IntegerField(required=False, widget=forms.HiddenInput)
    title = forms.CharField(max_length=200)
    task_type = forms.ChoiceField(label="Type", choices=TaskType.choices)
    difficulty = forms.ChoiceField(label="Expected difficulty", choices=Difficulty.choices)
    instruction = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8}),
        help_text="What the agent receives: a customer's message, a ticket, or a supervisor's request.",
    )
    snapshot = SnapshotChoiceField(
        queryset=snapshots_for_choice(), empty_label=None, label="World snapshot", help_text="The world it runs in."
    )
    family = forms.CharField(
        required=False,
        max_length=100,
        help_text="A theme, e.g. returns, warranty.",
        widget=forms.TextInput(attrs={"list": "family-list"}),
    )
    tags = forms.CharField(required=False, max_length=500, help_text="Separated by commas.")
    reviewer_notes = forms.CharField(
        required=False, label="Notes for reviewers", widget=forms.Textarea(attrs={"rows": 3})
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["snapshot"].queryset = snapshots_for_choice()

    def clean_tags(self) -> list[str]:
        return [t.strip() for t in (self.cleaned_data.get("tags") or "").split(",") if t.strip()]

    def service_fields(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            name: data[name]
            for name in (
                "title",
                "task_type",
                "difficulty",
                "instruction",
                "snapshot",
                "family",
                "tags",
                "reviewer_notes",
            )
        }

    def add_service_errors(self, exc: ValidationError) -> list[str]:
        """Put each error of a service on the field it names; return the others as "field: why" lines."""
        rest = []
        for field, whys in error_fields(exc).items():
            if field in self.fields:
                self.add_error(field, whys)
            else:
                rest += [why if field == NON_FIELD_ERRORS else f"{field}: {why}" for why in whys]
        return rest

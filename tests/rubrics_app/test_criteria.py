"""Criteria validation: every kind, checked against the world's models and the tool registry."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from corecraft_site.service_errors import error_fields, error_lines
from rubrics_app.criteria import criteria_validate, criterion_content_hash

SPEC = "criteria[0].spec."


def problems(items: list[dict]) -> str:
    with pytest.raises(ValidationError) as exc:
        criteria_validate(items)
    return " | ".join(error_lines(exc.value))


def state(**spec) -> dict:
    return {"kind": "state", "text": "check", "category": "correctness", "spec": spec}


def tool_call(**spec) -> dict:
    return {"kind": "tool_call", "text": "check", "category": "correctness", "spec": spec}


def response(**spec) -> dict:
    return {"kind": "response", "text": "check", "category": "format", "spec": spec}


def test_valid_criteria_of_every_kind_pass_and_are_normalised():
    valid = criteria_validate(
        [
            {"kind": "llm", "text": "Polite", "category": "tone"},
            state(entity_type="Order", filters=[{"field": "customer__email", "value": "a@b.io"}], field="status",
                  op="eq", value="cancelled"),
            state(entity_type="order_line_item", filters=[{"field": "order", "value": "ord-1"}], op="count_gte",
                  value=1),
            tool_call(tool="update_order_status", arguments={"order_id": {"value": "ord-1"}, "reason": {"op": "any"}}),
            response(op="number", value="549.98", tolerance=0.01),
            response(op="regex", value=r"ord-\d+", case_sensitive=True),
        ]
    )  # fmt: skip
    assert [c.kind for c in valid] == ["llm", "state", "state", "tool_call", "response", "response"]
    assert valid[1].spec["entity_type"] == "order" and valid[2].spec["entity_type"] == "orderlineitem"
    assert valid[3].spec["expect"] == "called" and valid[3].spec["arguments"]["order_id"]["op"] == "eq"


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        (state(entity_type="spaceship", field="id", op="eq", value="x"), SPEC + "entity_type: unknown entity type"),
        (state(entity_type="order", field="colour", op="eq", value="x"), SPEC + "field: order has no field 'colour'"),
        (state(entity_type="order", filters=[{"field": "customer__shoe_size", "value": 1}], field="status", op="eq",
               value="paid"), "criteria[0].spec.filters[0].field: customer has no field 'shoe_size'"),
        (state(entity_type="order", filters=[{"field": "status__customer", "value": 1}], field="status", op="eq",
               value="paid"), "status is not a relation"),
        (state(entity_type="customer", field="orders", op="not_null"), "reverse relation"),
        (state(entity_type="order", field="total", op="gt", value="lots"), SPEC + "value: 'lots' is not a valid"),
        (state(entity_type="order", field="status", op="eq"), "criteria[0].spec.value: required for eq"),
        (state(entity_type="order", op="eq", value=1), "criteria[0].spec.field: required for eq"),
        (state(entity_type="order", op="count_eq", value=-1), "whole number"),
        (state(entity_type="order", field="status", op="matches", value="x"), "criteria[0].spec.op"),
        (tool_call(tool="teleport"), "criteria[0].spec.tool: no tool named 'teleport'"),
        (tool_call(tool="update_order_status", arguments={"colour": {"value": "red"}}),
         "criteria[0].spec.arguments.colour: update_order_status takes no such argument"),
        (tool_call(tool="update_order_status", arguments={"reason": {"op": "regex", "value": "("}}),
         "not a valid regular expression"),
        (tool_call(tool="update_order_status", min_count=3, max_count=2), "max_count: must be >= min_count"),
        (response(op="number", value="about five"), "criteria[0].spec.value: number needs a number"),
        (response(op="contains", value=""), "needs a non-empty text"),
        (response(op="regex", value="[unclosed"), "not a valid regular expression"),
        ({"kind": "llm", "text": "x", "category": "tone", "spec": {"model": "gpt"}}, "criteria[0].spec.model"),
        ({"kind": "vibes", "text": "x", "category": "tone"}, "criteria[0].kind"),
        ({"kind": "llm", "text": "", "category": "tone"}, "criteria[0].text"),
        ({"kind": "llm", "text": "x", "category": "tone", "weight": -1}, "criteria[0].weight"),
    ],
)  # fmt: skip
def test_invalid_criteria_are_refused_naming_index_and_field(item, expected):
    assert expected in problems([item])


def test_problems_of_several_criteria_are_reported_together():
    text = problems([{"kind": "llm", "text": "ok", "category": "tone"}, tool_call(tool="nope"), response(op="nope")])
    assert "criteria[1].spec.tool" in text and "criteria[2].spec.op" in text


def test_problems_come_as_a_mapping_from_each_path_to_its_reasons():
    with pytest.raises(ValidationError) as exc:
        criteria_validate(
            [
                {"kind": "llm", "text": "ok", "category": "tone"},
                tool_call(tool="nope"),
                state(entity_type="order", op="eq", value=1, filters=[{"field": "colour", "value": 1}]),
            ]
        )
    fields = error_fields(exc.value)
    assert sorted(fields) == ["criteria[1].spec.tool", "criteria[2].spec.filters[0].field"]
    assert fields["criteria[1].spec.tool"][0].startswith("no tool named 'nope'; one of: ")
    assert fields["criteria[2].spec.filters[0].field"][0].startswith("order has no field 'colour'; its fields: ")
    with pytest.raises(ValidationError) as exc:
        criteria_validate({"kind": "llm"})
    assert error_fields(exc.value) == {"criteria": ["must be a list"]}


def test_duplicate_keys_are_refused():
    key = "6f2c1a52-6d8e-4c55-9a43-0a5d0e6f0b11"
    text = problems([{"key": key, "kind": "llm", "text": "a", "category": "tone"}] * 2)
    assert "criteria[1].key" in text


def test_content_hash_ignores_nothing_that_is_checked():
    base = {"kind": "llm", "text": "Polite", "spec": {}, "weight": 1.0, "category": "tone", "required": False}
    assert criterion_content_hash(**base) == criterion_content_hash(**dict(base))
    for change in ({"text": "Rude"}, {"weight": 2.0}, {"required": True}, {"category": "format"}):
        assert criterion_content_hash(**{**base, **change}) != criterion_content_hash(**base)

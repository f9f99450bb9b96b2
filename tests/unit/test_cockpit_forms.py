"""The cockpit's reading of submitted HTML forms: generated ``camunda:formData`` fields and
Camunda Forms (``.form`` files), whose rules the cockpit checks itself."""

from __future__ import annotations

from typing import Any

from starlette.datastructures import FormData

from bpm_cockpit import camunda_forms, forms

FORM: dict[str, Any] = {
    "id": "f",
    "components": [
        {"type": "textfield", "key": "code", "label": "Code", "validate": {"pattern": "[A-Z]{3}"}},
        {"type": "textfield", "key": "name", "label": "Name", "validate": {"maxLength": 4}},
        {
            "type": "select",
            "key": "size",
            "label": "Size",
            "values": [{"label": "Small", "value": "s"}],
            "validate": {"required": True},
        },
        {
            "type": "checklist",
            "key": "extras",
            "label": "Extras",
            "values": [{"label": "Gift", "value": "gift"}],
        },
        {"type": "number", "key": "n", "label": "N", "validate": {"max": 3}},
        {
            "type": "group",
            "components": [{"type": "checkbox", "key": "ok", "label": "OK"}],
        },
        {"type": "image", "key": "logo"},
    ],
}


def test_a_camunda_form_submission_breaking_its_rules_names_each_component() -> None:
    submitted = FormData(
        [("code", "abc"), ("name", "too long"), ("size", "xl"), ("extras", "cake"), ("n", "x")]
    )
    _, problems = camunda_forms.read(FORM, submitted)
    assert problems == {
        "code": ["Code must match [A-Z]{3}"],
        "name": ["Name takes at most 4 characters"],
        "size": ["'xl' is not an option"],
        "extras": ["'cake' is not an option"],
        "n": ["N must be a number"],
    }


def test_a_valid_camunda_form_submission_gives_typed_values() -> None:
    submitted = FormData(
        [("code", "ABC"), ("size", "s"), ("extras", "gift"), ("n", "2.5"), ("ok", "true")]
    )
    values, problems = camunda_forms.read(FORM, submitted)
    assert problems == {}
    assert values == {"code": "ABC", "size": "s", "extras": ["gift"], "n": 2.5, "ok": True}
    shown = [c.key for c in camunda_forms.components(FORM, values)]
    assert shown == ["code", "name", "size", "extras", "n", "ok"]  # the group flattened


def test_a_required_select_left_empty_is_a_problem() -> None:
    _, problems = camunda_forms.read(FORM, FormData([]))
    assert problems == {"size": ["Size is required"]}


def test_generated_fields_read_numbers_and_checkboxes() -> None:
    form = {
        "fields": [
            {"id": "amount", "type": "long", "validation": {"required": None}},
            {"id": "approved", "type": "boolean"},
            {"id": "note", "type": "string", "defaultValue": "${x}"},
            {"id": "fixed", "type": "string", "validation": {"readonly": None}},
        ]
    }
    fields = forms.fields_of(form, {"fixed": "F"})
    assert [(f.id, f.required, f.readonly, f.value) for f in fields] == [
        ("amount", True, False, None),
        ("approved", False, False, None),
        ("note", False, False, None),  # an expression default is not shown as text
        ("fixed", False, True, "F"),
    ]
    submitted = FormData([("amount", "42"), ("note", ""), ("fixed", "changed")])
    assert forms.submitted(fields, submitted) == {"amount": 42, "approved": False}
    assert forms.submitted(fields, FormData([("amount", "4x")]))["amount"] == "4x"


def test_the_engine_s_problems_are_sorted_by_field() -> None:
    problems = ["field 'amount' is required (required)", "something else"]
    assert forms.problems_by_field(problems) == {
        "amount": ["field 'amount' is required (required)"],
        "": ["something else"],
    }

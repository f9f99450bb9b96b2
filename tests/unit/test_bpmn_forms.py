"""Camunda 7 forms and assignments in the BPMN import and the validator, and the checks a
submission goes through (no database: these are pure functions)."""

from __future__ import annotations

from typing import Any

import pytest

from bpm.definitions import compile_definition
from bpm.definitions.bpmn import compile_bpmn
from bpm.definitions.form_values import check_submission, shown_defaults
from bpm.definitions.forms import date_format, parse_form
from bpm.errors import FormInvalid, InvalidDefinition
from tests.helpers.modeler import chain, modeler_file


def user_task(attrs: str = "", fields: str = "") -> str:
    data = (
        f"<bpmn:extensionElements><camunda:formData>{fields}</camunda:formData>"
        "</bpmn:extensionElements>"
        if fields
        else ""
    )
    return modeler_file(
        "p",
        '    <bpmn:startEvent id="S" />\n'
        f'    <bpmn:userTask id="T" {attrs}>{data}</bpmn:userTask>\n'
        '    <bpmn:endEvent id="E" />\n' + chain("S", "T", "E"),
    )


def task_node(text: str) -> dict[str, Any]:
    [doc] = compile_bpmn(text)
    compile_definition(doc)
    node: dict[str, Any] = next(n for n in doc["nodes"] if n["id"] == "T")
    return node


def refusal(text: str) -> str:
    with pytest.raises(InvalidDefinition) as info:
        compile_definition(compile_bpmn(text)[0])
    return str(info.value)


def test_form_key_ref_and_people_are_read() -> None:
    node = task_node(
        user_task(
            'camunda:formRef="review" camunda:formRefBinding="version" camunda:formRefVersion="2"'
            ' camunda:candidateUsers="ann, ${approvers}" camunda:followUpDate="PT4H"'
            ' camunda:priority="10"'
        )
    )
    assert node["form"] == {"ref": {"id": "review", "binding": "version", "version": 2}}
    assert node["candidate_users"] == ["ann", "${approvers}"]
    assert (node["follow_up_date"], node["priority"]) == ("PT4H", 10)
    plain = task_node(user_task('camunda:formKey="camunda-forms:deployment:x.form"'))
    assert plain["form"] == {"key": "camunda-forms:deployment:x.form"}


@pytest.mark.parametrize(
    ("attrs", "fields", "expected"),
    [
        (
            "",
            '<camunda:formField id="a"><camunda:validation><camunda:constraint name="pattern" '
            'config="x" /></camunda:validation></camunda:formField>',
            "has the unknown constraint 'pattern'",
        ),
        (
            "",
            '<camunda:formField id="a"><camunda:validation><camunda:constraint name="validator" '
            'config="org.acme.Check" /></camunda:validation></camunda:formField>',
            "names the custom validator 'org.acme.Check', which would run code",
        ),
        (
            "",
            '<camunda:formField id="a" type="string"><camunda:validation><camunda:constraint '
            'name="min" config="1" /></camunda:validation></camunda:formField>',
            "constraint 'min' does not apply to a string field",
        ),
        (
            "",
            '<camunda:formField id="d" type="date" datePattern="yyyy-MM-dd Q" />',
            "uses 'Q', which bpm cannot read",
        ),
        ('camunda:formKey="a" camunda:formRef="b"', "", "has both camunda:formKey and"),
        (
            'camunda:formRef="b" camunda:formRefBinding="version"',
            "",
            "without a whole camunda:formRefVersion",
        ),
        ('camunda:dueDate="tomorrow"', "", "'tomorrow' is not a date"),
        ('camunda:priority="high"', "", "'priority' must be a whole number"),
    ],
)
def test_what_a_form_or_assignment_cannot_mean_is_refused(
    attrs: str, fields: str, expected: str
) -> None:
    assert expected in refusal(user_task(attrs, fields))


def test_java_date_patterns_read_as_strptime() -> None:
    assert date_format("dd/MM/yyyy", "f", None) == "%d/%m/%Y"
    assert date_format("yyyy-MM-dd'T'HH:mm", "f", None) == "%Y-%m-%dT%H:%M"


FORM = parse_form(
    {
        "fields": [
            {"id": "name", "validation": {"minlength": 2, "maxlength": 5}},
            {"id": "ok", "type": "boolean"},
            {"id": "when", "type": "date", "datePattern": "yyyy-MM-dd"},
            {"id": "score", "type": "custom:stars"},
        ]
    },
    "node 'T' (userTask)",
    "T",
)


@pytest.mark.parametrize(
    ("submitted", "problem"),
    [
        ({"name": "a"}, "field 'name' must be at least 2 characters (minlength), got 1"),
        ({"name": "abcdef"}, "field 'name' must be at most 5 characters (maxlength), got 6"),
        ({"ok": "yes"}, "field 'ok' must be true or false (boolean)"),
        ({"when": "2027-02-30"}, "field 'when' must be a date in the pattern yyyy-MM-dd"),
    ],
)
def test_submissions_are_checked_by_type_and_rule(submitted: dict[str, Any], problem: str) -> None:
    assert FORM is not None
    with pytest.raises(FormInvalid) as info:
        check_submission(FORM, submitted, {}, {}, "completing T")
    assert problem in info.value.problems[0]


def test_a_custom_type_is_not_type_checked_and_a_good_submission_passes() -> None:
    assert FORM is not None
    good = {"name": "ann", "ok": True, "when": "2027-02-28", "score": {"any": ["thing"]}}
    assert check_submission(FORM, good, {}, {}, "completing T") == {}


def test_a_boolean_default_reads_as_camunda_reads_it() -> None:
    """Camunda 7's boolean form type: "true" in any case is true, any other text false."""
    fields = "".join(
        f'<camunda:formField id="{name}" type="boolean" defaultValue="{text}" />'
        for name, text in (("a", "TRUE"), ("b", "False"), ("c", "testdrive"), ("d", "true"))
    )
    node = task_node(user_task("", fields))
    spec = parse_form(node["form"], "node 'T' (userTask)", "T")
    assert spec is not None
    assert [f.default for f in spec.fields] == [True, False, False, True]


def test_an_enum_with_no_values_deploys_and_takes_no_value() -> None:
    node = task_node(user_task("", '<camunda:formField id="k" type="enum" />'))
    spec = parse_form(node["form"], "node 'T' (userTask)", "T")
    assert spec is not None and spec.fields[0].values == ()
    with pytest.raises(FormInvalid) as info:
        check_submission(spec, {"k": "x"}, {}, {}, "completing T")
    assert "field 'k' must be no value (the enum has none)" in info.value.problems[0]
    assert check_submission(spec, {}, {}, {}, "completing T") == {}


def test_a_binding_left_behind_without_a_form_ref_binds_nothing() -> None:
    """Camunda Modeler keeps formRefBinding when a form reference becomes a form key."""
    node = task_node(
        user_task('camunda:formKey="embedded:app:x.html" camunda:formRefBinding="latest"')
    )
    assert node["form"] == {"key": "embedded:app:x.html"}


def test_a_default_with_text_around_expressions_is_a_composite() -> None:
    node = task_node(
        user_task("", '<camunda:formField id="n" defaultValue="${first} ${last}, Dr." />')
    )
    spec = parse_form(node["form"], "node 'T' (userTask)", "T")
    assert spec is not None and spec.evaluates
    assert shown_defaults(spec, {"first": "Ada", "last": "Byron"}) == {"n": "Ada Byron, Dr."}


def test_a_field_id_is_any_printable_name_as_camunda_takes_it() -> None:
    node = task_node(user_task("", '<camunda:formField id="jaar-omzet" type="long" />'))
    spec = parse_form(node["form"], "node 'T' (userTask)", "T")
    assert spec is not None and spec.fields[0].id == "jaar-omzet"
    with pytest.raises(FormInvalid):
        check_submission(spec, {"jaar-omzet": "veel"}, {}, {}, "completing T")

"""Reading DMN files: versions, what is refused and how it is reported (line, element, every
problem at once), hostile files, and a fuzz run where every broken file must be refused
cleanly with InvalidDefinition."""

from __future__ import annotations

import random
import re

import pytest

from bpm.definitions.bpmn_xml import MAX_BYTES
from bpm.dmn import parse_dmn
from bpm.dmn.limits import MAX_DECISIONS, MAX_NESTING, MAX_PROBLEMS, MAX_RULES
from bpm.errors import DecisionFailed, InvalidDefinition
from tests.helpers.dmn import NAMESPACES, decision_table, definitions, model, table_decision

SIMPLE = ([("Season", "season", "string")], [("dish", "string")], [(['"Fall"'], ['"Stew"'])])


def refused(xml: str | bytes) -> str:
    with pytest.raises(InvalidDefinition) as caught:
        parse_dmn(xml)
    return str(caught.value)


@pytest.mark.parametrize("version", sorted(NAMESPACES))
def test_every_dmn_version_reads(version: str) -> None:
    file = parse_dmn(decision_table(*SIMPLE, version=version))
    assert file.dmn_version == version
    result = file.decision("decision").evaluate({"season": "Fall"})
    assert result.entries == [{"dish": "Stew"}]


def test_camundas_alternative_namespaces_read() -> None:
    for alternative in (
        "http://www.omg.org/spec/DMN/20151101/dmn11.xsd",
        "https://www.omg.org/spec/DMN/20191111/DMN13.xsd",
    ):
        xml = decision_table(*SIMPLE, version="1.1").replace(NAMESPACES["1.1"], alternative)
        assert parse_dmn(xml).decision("decision")


def test_bytes_and_text_both_read() -> None:
    text = model("dish.dmn")
    assert list(parse_dmn(text.encode()).decisions) == list(parse_dmn(text).decisions)


@pytest.mark.parametrize(
    ("xml", "message"),
    [
        ('<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL"/>', "not a DMN file"),
        ("<decision/>", "line 1: not a DMN file: the root element is <decision>"),
        ("not xml at all", "line 1: not well-formed XML"),
        ("", "not well-formed XML"),
    ],
)
def test_files_that_are_not_dmn(xml: str, message: str) -> None:
    assert message in refused(xml)


def test_a_file_without_decision_logic_has_nothing_to_evaluate() -> None:
    xml = definitions('  <decision id="empty" name="Empty" />\n  <inputData id="i" />\n')
    assert "the DMN file has no decision with a decision table" in refused(xml)


def test_a_decision_without_logic_is_ignored_as_camunda_does() -> None:
    xml = definitions(table_decision(*SIMPLE) + '  <decision id="later" name="Later" />\n')
    assert list(parse_dmn(xml).decisions) == ["decision"]


def test_every_problem_is_reported_at_once_with_its_line_and_element() -> None:
    xml = decision_table(
        [("Season", "season", "string"), ("Guests", "guestCount", "integer")],
        [("dish", "string")],
        [
            (['"Fall"', "<= "], ['"Stew"']),
            (["Fall", '"many"'], ['"Soup"']),
            (["-", "-"], ["${dish}"]),
        ],
    )
    message = refused(xml)
    lines = message.splitlines()
    assert len(lines) == 3
    assert re.fullmatch(
        r"line \d+: inputEntry 'UnaryTests_1_2' in decision 'decision': the expression ends "
        r"where a value was expected \(in '<='\)",
        lines[0],
    )
    assert re.fullmatch(
        r"line \d+: inputEntry 'UnaryTests_2_2' in decision 'decision': \"many\" is a string, "
        r"but input 'Guests' has typeRef integer",
        lines[1],
    )
    assert lines[2].endswith(
        "outputEntry 'LiteralExpression_3_1' in decision 'decision': '${...}' at column 1 is "
        "JUEL (Java EL), not FEEL; write the FEEL expression itself (a variable name, a "
        "literal, a comparison) (in '${dish}')"
    )
    numbers = [int(line.split(":")[0].removeprefix("line ")) for line in lines]
    assert numbers == sorted(numbers) and numbers[0] > 1


def test_the_reported_line_is_the_cells_line() -> None:
    text = model("dish.dmn").replace("<text>&lt;= 4</text>", "<text>&lt;= four)</text>")
    message = refused(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "&lt;= four)" in t)
    assert message.startswith(
        f"line {line - 1}: inputEntry 'UnaryTests_spring_few_guests' in decision 'dish': "
    )


def test_the_first_problems_element_is_on_the_error() -> None:
    xml = decision_table(*SIMPLE[:2], [(["[1.."], ['"x"'])])
    with pytest.raises(InvalidDefinition) as caught:
        parse_dmn(xml)
    assert caught.value.element == "UnaryTests_1_1"


def test_a_long_list_of_problems_is_cut() -> None:
    rules = [([f"< {i} {i}"], ['"x"']) for i in range(80)]
    message = refused(decision_table(SIMPLE[0], SIMPLE[1], rules))
    assert len(message.splitlines()) == MAX_PROBLEMS + 1
    assert message.endswith(f"... and {80 - MAX_PROBLEMS} more problems")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('hitPolicy="FIRST"', 'hitPolicy="SOMETIMES"'), "hitPolicy 'SOMETIMES' is not one of"),
        (
            ('hitPolicy="FIRST"', 'hitPolicy="FIRST" aggregation="SUM"'),
            "aggregation SUM only applies to hit policy COLLECT, not FIRST",
        ),
        (
            ('hitPolicy="FIRST"', 'hitPolicy="COLLECT" aggregation="AVG"'),
            "aggregation 'AVG' is not SUM, MIN, MAX or COUNT",
        ),
        (('hitPolicy="FIRST"', 'hitPolicy="PRIORITY"'), "no output lists its values"),
        (
            ('<input id="Input_1"', '<input id="Input_1" camunda:inputVariable="a b"'),
            "camunda:inputVariable 'a b' is not a name",
        ),
        (
            ('<rule id="DecisionRule_1">', "<rule>"),
            "rule #1 in decision 'decision': a rule needs an id",
        ),
        (('<decision id="decision" ', "<decision "), "decision #1: a decision needs an id"),
        (
            ('<output id="Output_1" label="dish" name="dish" typeRef="string">', ""),
            "the rule has 1 input entries and 1 output entries, but the table has 1 inputs "
            "and 0 outputs",
        ),
    ],
)
def test_table_problems(change: tuple[str, str], message: str) -> None:
    xml = decision_table(*SIMPLE, hit_policy="FIRST")
    assert change[0] in xml
    xml = xml.replace(*change)
    if "Output_1" not in xml:
        xml = xml.replace("</output>", "")
    assert message in refused(xml)


def test_several_outputs_need_distinct_names() -> None:
    xml = decision_table(
        SIMPLE[0], [("a", None), ("", None), ("a", None)], [(["-"], ["1", "2", "3"])]
    )
    message = refused(xml)
    assert (
        "output 'Output_2' in decision 'decision': each of several outputs needs a name" in message
    )
    assert "output 'Output_3' in decision 'decision': a second output named 'a'" in message


def test_an_aggregation_needs_one_output() -> None:
    xml = decision_table(
        SIMPLE[0],
        [("a", None), ("b", None)],
        [(["-"], ["1", "2"])],
        hit_policy="COLLECT",
        aggregation="SUM",
    )
    assert "COLLECT with aggregation SUM needs exactly one output" in refused(xml)


def test_literals_that_cannot_fit_the_typeref_are_refused() -> None:
    xml = decision_table(
        [("N", "n", "integer")],
        [("flag", "boolean")],
        [(["[1..10]"], ['"yes"']), (['"ten"'], ["true"])],
    )
    message = refused(xml)
    assert (
        "outputEntry 'LiteralExpression_1_1' in decision 'decision': "
        '"yes" (string) is not a valid boolean' in message
    )
    assert (
        "inputEntry 'UnaryTests_2_1' in decision 'decision': "
        "\"ten\" is a string, but input 'N' has typeRef integer" in message
    )


def test_output_values_are_converted_and_checked() -> None:
    xml = decision_table(
        SIMPLE[0], [("n", "integer", '1, "two"')], [(["-"], ["1"])], hit_policy="PRIORITY"
    )
    assert '"two" (string) is not a valid integer' in refused(xml)


# --- expression languages -------------------------------------------------------------------


@pytest.mark.parametrize("language", ["javascript", "groovy", "python", "JRuby"])
@pytest.mark.parametrize("element", ["inputEntry", "outputEntry", "inputExpression"])
def test_script_languages_are_refused_naming_the_cell(language: str, element: str) -> None:
    xml = decision_table(*SIMPLE)
    tag = {
        "inputEntry": "UnaryTests_1_1",
        "outputEntry": "LiteralExpression_1_1",
        "inputExpression": "InputExpression_1",
    }[element]
    xml = re.sub(
        rf'<{element} id="{tag}"', f'<{element} id="{tag}" expressionLanguage="{language}"', xml
    )
    message = refused(xml)
    assert (
        f"{element} '{tag}' in decision 'decision': "
        f"expressionLanguage '{language}' is not supported" in message
    )


def test_a_file_wide_script_language_is_refused_for_every_cell() -> None:
    xml = decision_table(*SIMPLE).replace(
        'namespace="http://camunda.org/schema/1.0/dmn"',
        'namespace="http://camunda.org/schema/1.0/dmn" expressionLanguage="javascript"',
    )
    assert len(refused(xml).splitlines()) == 3


def test_a_file_wide_feel_language_is_feel() -> None:
    xml = decision_table(*SIMPLE).replace(
        'namespace="http://camunda.org/schema/1.0/dmn"',
        'namespace="http://camunda.org/schema/1.0/dmn" '
        'expressionLanguage="https://www.omg.org/spec/DMN/20191111/FEEL/"',
    )
    assert parse_dmn(xml).decision("decision")


@pytest.mark.parametrize(
    ("element", "text", "message"),
    [
        (
            "inputEntry",
            '${season == "Fall"}',
            "JUEL input entries other than a boolean variable (${approved}) are not supported",
        ),
        (
            "outputEntry",
            "${dish.toUpperCase()}",
            "the JUEL expression '${dish.toUpperCase()}' is not supported",
        ),
        ("outputEntry", "${''.getClass().forName('java.lang.Runtime')}", "is not supported"),
    ],
)
def test_juel_beyond_a_name_or_literal_is_refused(element: str, text: str, message: str) -> None:
    xml = decision_table(*SIMPLE)
    tag = "UnaryTests_1_1" if element == "inputEntry" else "LiteralExpression_1_1"
    xml = re.sub(
        rf'<{element} id="{tag}">\s*<text>[^<]*</text>',
        f'<{element} id="{tag}" expressionLanguage="juel"><text>{text}</text>',
        xml,
    )
    assert message in refused(xml)


def test_trivial_juel_outputs_are_names_and_literals() -> None:
    xml = decision_table(
        SIMPLE[0], [("a", None), ("b", None), ("c", None)], [(["-"], ["${dish}", "'single'", "42"])]
    )
    for tag in ("LiteralExpression_1_1", "LiteralExpression_1_2", "LiteralExpression_1_3"):
        xml = xml.replace(
            f'<outputEntry id="{tag}">', f'<outputEntry id="{tag}" expressionLanguage="JUEL">'
        )
    result = parse_dmn(xml).decision("decision").evaluate({"season": "x", "dish": "Stew"})
    assert result.entries == [{"a": "Stew", "b": "single", "c": 42}]


def test_a_juel_input_entry_may_be_a_boolean_variable() -> None:
    xml = decision_table(SIMPLE[0], SIMPLE[1], [(["${isFall}"], ['"Stew"'])])
    xml = xml.replace(
        '<inputEntry id="UnaryTests_1_1">',
        '<inputEntry id="UnaryTests_1_1" expressionLanguage="juel">',
    )
    decision = parse_dmn(xml).decision("decision")
    assert decision.evaluate({"season": "x", "isFall": True}).entries == [{"dish": "Stew"}]
    assert decision.evaluate({"season": "x", "isFall": False}).entries == []
    with pytest.raises(DecisionFailed, match="must be true or false"):
        decision.evaluate({"season": "x", "isFall": "yes"})


def test_java_el_in_a_feel_cell_is_refused() -> None:
    xml = decision_table(
        [("S", "${java.lang.Runtime.getRuntime().exec('id')}", None)], SIMPLE[1], SIMPLE[2]
    )
    assert (
        "inputExpression 'InputExpression_1' in decision 'decision': '${...}' at column 1 is JUEL"
        in refused(xml)
    )


# --- decisions and their requirements -------------------------------------------------------


def test_unsupported_decision_logic_is_refused() -> None:
    xml = definitions(
        '  <decision id="ctx" name="Context">\n    <variable name="ctx" />\n'
        '    <context id="Context_1" />\n  </decision>\n'
    )
    assert refused(xml) == (
        "line 5: context 'Context_1' in decision 'ctx': decision logic <context> is not "
        "supported yet; only decision tables and literal expressions are"
    )


def test_a_literal_expression_needs_a_variable() -> None:
    xml = definitions(
        '  <decision id="lit" name="Lit">\n    <literalExpression id="L1"><text>1 + 1</text>'
        "</literalExpression>\n  </decision>\n"
    )
    assert (
        "decision 'lit': a decision with a literal expression needs a <variable name=...>"
        in refused(xml)
    )


def test_required_decisions_must_exist_and_not_loop() -> None:
    a = table_decision(*SIMPLE, key="a", requires=["b"])
    b = table_decision(*SIMPLE, key="b", requires=["a"])
    assert "the required decisions form a loop: a -> b -> a" in refused(definitions(a + b))
    lonely = table_decision(*SIMPLE, key="a", requires=["ghost"])
    assert "requiredDecision #1 in decision 'a': no decision 'ghost' in this file" in refused(
        definitions(lonely)
    )
    itself = table_decision(*SIMPLE, key="a", requires=["a"])
    assert "the required decisions form a loop: a -> a" in refused(definitions(itself))


def test_a_required_decision_without_logic_is_named() -> None:
    a = table_decision(*SIMPLE, key="a", requires=["b"])
    xml = definitions(a + '  <decision id="b" name="B" />\n')
    assert "the required decision 'b' has no decision logic" in refused(xml)


def test_duplicate_decision_ids_are_refused() -> None:
    xml = definitions(table_decision(*SIMPLE, key="a") + table_decision(*SIMPLE, key="a"))
    assert "decision 'a': a second decision with this id" in refused(xml)


def test_a_diamond_of_requirements_evaluates_each_decision_once() -> None:
    top = table_decision(
        [("X", "x", None), ("Y", "y", None)],
        [("z", None)],
        [(["-", "-"], ["x + y"])],
        key="top",
        requires=["left", "right"],
    )
    left = table_decision(
        [("B", "base", None)], [("x", None)], [(["-"], ["base + 1"])], key="left", requires=["base"]
    )
    right = table_decision(
        [("B", "base", None)],
        [("y", None)],
        [(["-"], ["base * 10"])],
        key="right",
        requires=["base"],
    )
    base = table_decision([("S", "seed", None)], [("base", None)], [(["-"], ["seed"])], key="base")
    file = parse_dmn(definitions(top + left + right + base))
    result = file.decision("top").evaluate({"seed": 2})
    assert result.entries == [{"z": 23}]
    assert [r.decision for r in result.required] == ["base", "left", "right"]


def test_asking_for_an_unknown_decision_names_the_known_ones() -> None:
    file = parse_dmn(model("dish.dmn"))
    with pytest.raises(
        InvalidDefinition, match=r"no decision 'dessert' \(decisions: 'dish', 'beverages'\)"
    ):
        file.decision("dessert")


# --- hostile files --------------------------------------------------------------------------

BOMB = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
    '<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
    '<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>\n'
    f'<definitions xmlns="{NAMESPACES["1.3"]}"><decision id="d">&lol3;</decision></definitions>'
)
EXTERNAL = (
    '<?xml version="1.0"?>\n<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n'
    f'<definitions xmlns="{NAMESPACES["1.3"]}"><decision id="d" name="&x;"/></definitions>'
)
REMOTE_DTD = (
    f'<!DOCTYPE d SYSTEM "http://127.0.0.1:9/d.dtd"><definitions xmlns="{NAMESPACES["1.3"]}"/>'
)


@pytest.mark.parametrize("xml", [BOMB, EXTERNAL, REMOTE_DTD])
def test_dtds_and_entities_are_refused(xml: str) -> None:
    message = refused(xml)
    assert "refused" in message and "passwd" not in message


def test_too_large_a_file_is_refused() -> None:
    xml = decision_table(*SIMPLE).replace(
        "</definitions>", "<!--" + "x" * MAX_BYTES + "--></definitions>"
    )
    assert "bytes; at most" in refused(xml)


def test_too_many_rules_are_refused_without_reading_them() -> None:
    rule = (
        '<rule id="r"><inputEntry><text>!!!</text></inputEntry>'
        "<outputEntry><text>1</text></outputEntry></rule>"
    )
    xml = decision_table(*SIMPLE).replace("</decisionTable>", rule * MAX_RULES + "</decisionTable>")
    assert refused(xml).endswith(f"{MAX_RULES + 1} rules; at most {MAX_RULES} are accepted")


def test_too_many_decisions_are_refused() -> None:
    body = "".join(f'<decision id="d{i}"/>' for i in range(MAX_DECISIONS + 1))
    assert f"at most {MAX_DECISIONS} are accepted" in refused(definitions(body))


def test_deep_xml_nesting_is_refused() -> None:
    xml = (
        decision_table(*SIMPLE)
        .replace("<description>", "")
        .replace("</decisionTable>", "<a>" * 200 + "</a>" * 200 + "</decisionTable>")
    )
    assert "nested deeper" in refused(xml)


def test_deep_feel_nesting_is_refused() -> None:
    deep = "(" * (MAX_NESTING * 4) + "1" + ")" * (MAX_NESTING * 4)
    xml = decision_table(SIMPLE[0], SIMPLE[1], [([f"< {deep}"], ["1"])])
    assert "nested deeper than" in refused(xml)


def test_a_huge_cell_is_refused() -> None:
    xml = decision_table(SIMPLE[0], SIMPLE[1], [([", ".join(['"x"'] * 5000)], ["1"])])
    assert "characters long; at most" in refused(xml)


# --- fuzz -----------------------------------------------------------------------------------


def _mutations(text: bytes, rng: random.Random) -> list[bytes]:
    out = [text[: rng.randrange(len(text))] for _ in range(4)]
    for _ in range(6):
        data = bytearray(text)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        out.append(bytes(data))
    tags = [m.span() for m in re.finditer(rb"<[^<>]+>", text)]
    for _ in range(6):
        start, end = tags[rng.randrange(len(tags))]
        out.append(text[:start] + text[end:])
    texts = [m.span() for m in re.finditer(rb"<text>[^<]*</text>", text)]
    for _ in range(6):
        start, end = texts[rng.randrange(len(texts))]
        junk = bytes(
            rng.choice(b"()[]<>=!.,-+*/\"'?$#{}` and or not 0123456789abc") for _ in range(12)
        )
        out.append(text[:start] + b"<text>" + junk + b"</text>" + text[end:])
    attributes = [m.span() for m in re.finditer(rb'\s[\w:]+="[^"]*"', text)]
    for _ in range(3):
        start, end = attributes[rng.randrange(len(attributes))]
        out.append(text[:start] + text[end:])
    out.append(BOMB.encode() + text)
    out.append(text.replace(b"?>", b"?>" + BOMB.split("\n")[1].encode(), 1))
    return out


def test_fuzz__every_mutation_reads_or_is_refused_cleanly() -> None:
    rng = random.Random(11)
    models = [model("dish.dmn").encode(), model("bonus.dmn").encode()]
    outcomes = {"read": 0, "refused": 0}
    for original in models:
        for _ in range(12):
            for mutated in _mutations(original, rng):
                try:
                    file = parse_dmn(mutated)
                except InvalidDefinition as exc:
                    assert str(exc)
                    outcomes["refused"] += 1
                else:
                    outcomes["read"] += 1
                    assert file.decisions
    assert outcomes["refused"] > 100 and outcomes["read"] > 10

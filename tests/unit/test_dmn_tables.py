"""DMN decision tables evaluated as Camunda 7 does: hit policies, typeRefs, results, the
errors an evaluation raises, required decisions and literal expressions."""

from __future__ import annotations

import pickle
import random
from datetime import date, datetime
from typing import Any

import pytest

from bpm.dmn import Decision, HitPolicy, ResultMode, map_result, parse_dmn, result_mode
from bpm.errors import DecisionFailed, DecisionResultError, InvalidDefinition
from tests.helpers.dmn import decision_table, definitions, model, table_decision


def one(xml: str, key: str = "decision") -> Decision:
    return parse_dmn(xml).decision(key)


def outputs(decision: Decision, **variables: Any) -> list[dict[str, Any]]:
    return decision.evaluate(variables).entries


# --- the dish example (DMN 1.3, as Camunda Modeler saves it) --------------------------------

DISH = parse_dmn(model("dish.dmn"))


@pytest.mark.parametrize(
    ("season", "guests", "dish", "rule"),
    [
        ("Fall", 8, "Spareribs", "DecisionRule_fall"),
        ("Winter", 1, "Roastbeef", "DecisionRule_winter"),
        ("Spring", 4, "Dry Aged Gourmet Steak", "DecisionRule_spring_few"),
        ("Spring", 5, "Steak", "DecisionRule_spring_more"),
        ("Spring", 8, "Steak", "DecisionRule_spring_more"),
        ("Winter", 9, "Stew", "DecisionRule_stew"),
        ("Summer", 200, "Light Salad and a nice Steak", "DecisionRule_summer"),
    ],
)
def test_dish(season: str, guests: int, dish: str, rule: str) -> None:
    result = DISH.decision("dish").evaluate({"season": season, "guestCount": guests})
    assert result.rule_ids == [rule]
    assert result.entries == [{"desiredDish": dish}]
    assert map_result(result, "singleEntry") == dish
    assert [(i.input_id, i.value) for i in result.inputs] == [
        ("Input_season", season),
        ("Input_guests", guests),
    ]


def test_the_file_keeps_names_versions_and_camunda_attributes() -> None:
    assert DISH.dmn_version == "1.3"
    assert DISH.name == "Dinner Decisions"
    assert list(DISH.decisions) == ["dish", "beverages"]
    dish = DISH.decision("dish")
    assert (dish.name, dish.version_tag, dish.history_time_to_live) == ("Dish", "2", "30")
    rules = dish.logic.rules  # type: ignore[union-attr]
    assert rules[0].description == "Spareribs for a small autumn dinner"
    assert rules[5].condition_texts == ('"Summer"', "")


def test_a_typeref_converts_the_input_value() -> None:
    result = DISH.decision("dish").evaluate({"season": "Fall", "guestCount": "3"})
    assert result.inputs[1].value == 3
    assert result.rule_ids == ["DecisionRule_fall"]


def test_no_matching_rule_is_an_empty_result_not_an_error() -> None:
    dish = DISH.decision("dish")
    result = dish.evaluate({"season": "Monsoon", "guestCount": 2})
    assert result.rules == () and result.entries == []
    assert map_result(result, "singleEntry") is None
    assert map_result(result, "singleResult") is None
    assert map_result(result, "collectEntries") == []
    assert map_result(result, "resultList") == []


def test_a_caller_can_require_a_match() -> None:
    with pytest.raises(DecisionFailed) as caught:
        DISH.decision("dish").evaluate({"season": "Monsoon", "guestCount": 2}, require_match=True)
    assert str(caught.value) == (
        "decision 'dish': no rule matched (inputs: season=\"Monsoon\", guestCount=2)"
    )
    assert caught.value.decision == "dish"
    assert caught.value.inputs == {"Input_season": "Monsoon", "Input_guests": 2}


def test_required_decisions_are_evaluated_first_and_their_outputs_become_variables() -> None:
    beverages = DISH.decision("beverages")
    result = beverages.evaluate({"season": "Winter", "guestCount": 12, "guestsWithChildren": False})
    assert map_result(result, "collectEntries") == ["Guiness", "Water"]
    assert [r.decision for r in result.required] == ["dish"]
    assert result.required[0].entries == [{"desiredDish": "Stew"}]
    assert result.inputs[0].value == "Stew"


def test_a_missing_variable_fails_naming_it() -> None:
    with pytest.raises(
        DecisionFailed,
        match=r"input 'How many guests' \('guestCount'\): "
        r"variable 'guestCount' is not set \(inputs: season=\"Fall\"\)",
    ):
        DISH.decision("dish").evaluate({"season": "Fall"})


def test_a_value_that_does_not_fit_the_typeref_fails() -> None:
    with pytest.raises(DecisionFailed, match=r'"many" \(string\) is not a valid integer'):
        DISH.decision("dish").evaluate({"season": "Fall", "guestCount": "many"})


def test_decision_failed_pickles() -> None:
    try:
        DISH.decision("dish").evaluate({"season": "Fall", "guestCount": 2.5})
    except DecisionFailed as exc:
        copy = pickle.loads(pickle.dumps(exc))
        assert str(copy) == str(exc) and copy.decision == "dish"
    else:
        raise AssertionError("2.5 guests is not an integer")


# --- hit policies ---------------------------------------------------------------------------

AMOUNT = [("Amount", "amount", "integer")]


def policy_table(
    policy: str | None, *rules: tuple[str, str], values: str | None = None
) -> Decision:
    output: Any = ("result", "string", values) if values else ("result", "string")
    return one(decision_table(AMOUNT, [output], [([e], [o]) for e, o in rules], hit_policy=policy))


def test_unique_is_the_default_and_two_matches_break_it() -> None:
    table = policy_table(None, ("< 10", '"small"'), ("< 100", '"medium"'))
    assert table.logic.hit_policy is HitPolicy.UNIQUE  # type: ignore[union-attr]
    assert outputs(table, amount=50) == [{"result": "medium"}]
    with pytest.raises(DecisionFailed) as caught:
        table.evaluate({"amount": 5})
    assert str(caught.value) == (
        "decision 'decision': hit policy UNIQUE allows one matching rule, but 2 matched: "
        "'DecisionRule_1' (row 1), 'DecisionRule_2' (row 2) (inputs: amount=5)"
    )


def test_first_takes_the_first_match_in_rule_order() -> None:
    table = policy_table("FIRST", ("< 10", '"small"'), ("< 100", '"medium"'), ("-", '"any"'))
    assert outputs(table, amount=5) == [{"result": "small"}]
    assert outputs(table, amount=500) == [{"result": "any"}]


def test_any_accepts_equal_outputs_and_refuses_different_ones() -> None:
    table = policy_table("ANY", ("< 10", '"low"'), ("< 20", '"low"'), ("[5..6]", '"odd"'))
    result = table.evaluate({"amount": 8})
    assert result.rule_ids == ["DecisionRule_1"] and result.entries == [{"result": "low"}]
    with pytest.raises(
        DecisionFailed,
        match=r"hit policy ANY needs the matching rules to give "
        r"equal outputs, but rule 'DecisionRule_1' gives \{result: \"low\"\} and "
        r"rule 'DecisionRule_3' gives \{result: \"odd\"\}",
    ):
        table.evaluate({"amount": 5})


def test_rule_order_and_collect_keep_every_match_in_rule_order() -> None:
    for policy in ("RULE ORDER", "COLLECT"):
        table = policy_table(policy, (">= 0", '"a"'), ("> 10", '"b"'), ("< 0", '"c"'), ("-", '"d"'))
        result = table.evaluate({"amount": 20})
        assert result.rule_ids == ["DecisionRule_1", "DecisionRule_2", "DecisionRule_4"]
        assert map_result(result, ResultMode.COLLECT_ENTRIES) == ["a", "b", "d"]


def test_priority_and_output_order_follow_the_output_values() -> None:
    rules = (("-", '"bronze"'), ("> 100", '"gold"'), ("> 10", '"silver"'))
    values = '"gold","silver","bronze"'
    priority = policy_table("PRIORITY", *rules, values=values)
    assert outputs(priority, amount=500) == [{"result": "gold"}]
    assert outputs(priority, amount=50) == [{"result": "silver"}]
    assert outputs(priority, amount=1) == [{"result": "bronze"}]
    ordered = policy_table("OUTPUT ORDER", *rules, values=values)
    assert ordered.evaluate({"amount": 500}).rule_ids == [
        "DecisionRule_2",
        "DecisionRule_3",
        "DecisionRule_1",
    ]


def test_priority_refuses_an_output_that_is_not_among_the_values() -> None:
    table = policy_table(
        "PRIORITY", ("-", '"bronze"'), ("> 1", '"platinum"'), values='"gold","bronze"'
    )
    with pytest.raises(DecisionFailed, match=r'gives result = "platinum", which is not one of'):
        table.evaluate({"amount": 5})


BONUS = parse_dmn(model("bonus.dmn")).decision("bonusPoints")


def test_collect_sum_in_a_dmn_1_1_file() -> None:
    result = BONUS.evaluate(
        {
            "order": {"amount": 150.0},
            "memberSince": "2010-05-01T00:00:00",
            "tier": "gold",
            "loyaltyBonus": 7,
        }
    )
    assert result.rule_ids == ["rule_base", "rule_big", "rule_loyal"]
    assert (result.aggregation, result.aggregate) == ("SUM", 42)
    assert result.entries == [{"points": 42}]
    assert map_result(result, "singleEntry") == 42


def test_collect_sum_skips_empty_output_entries_and_is_empty_without_values() -> None:
    result = BONUS.evaluate(
        {
            "order": {"amount": -5},
            "memberSince": "2020-05-01T00:00:00",
            "tier": "gold",
            "loyaltyBonus": 7,
        }
    )
    assert result.rule_ids == ["rule_none"]
    assert result.aggregate is None and result.entries == []
    assert map_result(result, "singleEntry") is None


@pytest.mark.parametrize(
    ("aggregation", "expected"), [("SUM", 6.5), ("MIN", 1), ("MAX", 3.5), ("COUNT", 3)]
)
def test_collect_aggregations(aggregation: str, expected: float) -> None:
    xml = decision_table(
        AMOUNT,
        [("points", None)],
        [(["-"], ["1"]), (["> 0"], ["2"]), (["> 1"], ["3.5"]), (["< 0"], ["100"])],
        hit_policy="COLLECT",
        aggregation=aggregation,
    )
    result = one(xml).evaluate({"amount": 5})
    assert result.aggregate == expected and result.entries == [{"points": expected}]


def test_count_of_no_match_is_zero() -> None:
    xml = decision_table(
        AMOUNT, [("n", None)], [(["< 0"], ["1"])], hit_policy="COLLECT", aggregation="COUNT"
    )
    assert one(xml).evaluate({"amount": 5}).entries == [{"n": 0}]


def test_sum_of_strings_fails() -> None:
    xml = decision_table(
        AMOUNT, [("points", None)], [(["-"], ['"ten"'])], hit_policy="COLLECT", aggregation="SUM"
    )
    with pytest.raises(
        DecisionFailed,
        match=r"COLLECT SUM needs numbers, but rule "
        r"'DecisionRule_1' gives \"ten\" \(string\)",
    ):
        one(xml).evaluate({"amount": 1})


# --- unary tests, values and types ----------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "matches", "misses"),
    [
        ('"gold"', ["gold"], ["Gold", "silver"]),
        ('"gold","silver"', ["gold", "silver"], ["bronze"]),
        ('not("gold","silver")', ["bronze", None], ["gold"]),
        ("null", [None], ["gold"]),
        ("not(null)", ["gold"], [None]),
        ("-", ["gold", None], []),
        ("", ["gold", None], []),
        ("favourite", ["plum"], ["gold"]),
        ('< "m"', ["gold"], ["silver", None]),
    ],
)
def test_string_entries(entry: str, matches: list[Any], misses: list[Any]) -> None:
    table = one(
        decision_table([("Tier", "tier", "string")], [("hit", "boolean")], [([entry], ["true"])])
    )
    for value in matches:
        assert outputs(table, tier=value, favourite="plum") == [{"hit": True}], value
    for value in misses:
        assert outputs(table, tier=value, favourite="plum") == [], value


@pytest.mark.parametrize(
    ("entry", "matches", "misses"),
    [
        ("[1..10]", [1, 10, 5.5], [0, 11]),
        ("]1..10[", [2, 9.99], [1, 10]),
        ("(1..10)", [2], [1, 10]),
        ("[1..10)", [1], [10]),
        ("(1..10]", [10], [1]),
        ("< 3", [2, -1], [3, None]),
        ("<= 3", [3], [4]),
        ("> 3", [4], [3]),
        (">= 3", [3], [2]),
        ("3", [3, 3.0], [4]),
        ("-3", [-3], [3]),
        ("1, 2, [5..7]", [1, 2, 6], [3, 8]),
        ("not([1..5], 9)", [6, 10], [1, 9]),
        ("< limit", [9], [10]),
        ("[limit - 5..limit * 2]", [5, 20], [4, 21]),
        ("? > 2 and ? < 5", [3, 4], [2, 5]),
        ("cellInput * 2 = 8", [4], [3]),
    ],
)
def test_number_entries(entry: str, matches: list[Any], misses: list[Any]) -> None:
    table = one(decision_table([("N", "n", None)], [("hit", "boolean")], [([entry], ["true"])]))
    for value in matches:
        assert outputs(table, n=value, limit=10) == [{"hit": True}], value
    for value in misses:
        assert outputs(table, n=value, limit=10) == [], value


def test_boolean_entries() -> None:
    table = one(
        decision_table(
            [("Paid", "paid", "boolean")],
            [("state", "string")],
            [(["true"], ['"paid"']), (["false"], ['"open"']), (["null"], ['"unknown"'])],
        )
    )
    assert outputs(table, paid=True) == [{"state": "paid"}]
    assert outputs(table, paid="false") == [{"state": "open"}]
    assert outputs(table, paid=None) == [{"state": "unknown"}]


def test_dates_and_date_times() -> None:
    table = one(
        decision_table(
            [("Due", "due", "date"), ("Sent", "sent", None)],
            [("late", "boolean")],
            [
                (['> date and time("2024-03-31T23:59:59")', '< date("2024-01-01")'], ["true"]),
                (
                    [
                        '[date and time("2024-01-01T00:00:00")..'
                        'date and time("2024-03-31T23:59:59")]',
                        "-",
                    ],
                    ["false"],
                ),
            ],
        )
    )
    assert outputs(table, due="2024-04-01T08:00:00", sent=date(2023, 12, 1)) == [{"late": True}]
    assert outputs(table, due=datetime(2024, 2, 1, 12), sent=None) == [{"late": False}]
    assert outputs(table, due="2024-04-01T08:00:00", sent=date(2024, 2, 1)) == []


def test_date_only_values_compare_with_date_literals() -> None:
    table = one(
        decision_table(
            [("Day", "day", "date")],
            [("q", "integer")],
            [(['[date("2024-01-01")..date("2024-03-31")]'], ["1"])],
        )
    )
    assert outputs(table, day="2024-02-29") == [{"q": 1}]
    assert outputs(table, day=date(2024, 4, 1)) == []


def test_comparing_values_of_different_types_fails_naming_the_cell() -> None:
    table = one(decision_table([("N", "n", None)], [("hit", "boolean")], [(["< 10"], ["true"])]))
    with pytest.raises(DecisionFailed) as caught:
        table.evaluate({"n": "five"})
    assert str(caught.value) == (
        "decision 'decision': rule 'DecisionRule_1' (row 1), input entry '< 10' of input 'N': "
        'cannot order "five" (string) and 10 (number) (inputs: n="five")'
    )


def test_a_date_and_a_date_time_do_not_compare() -> None:
    table = one(
        decision_table([("D", "d", None)], [("x", None)], [(['date("2024-01-01")'], ["1"])])
    )
    with pytest.raises(DecisionFailed, match="cannot compare"):
        table.evaluate({"d": datetime(2024, 1, 1)})


def test_output_entries_are_simple_expressions() -> None:
    table = one(
        decision_table(
            [("Amount", "order.amount", "double")],
            [("total", "double"), ("label", "string"), ("count", "integer"), ("none", None)],
            [
                (["> 0"], ["order.amount * 1.5 + fee", '"order " + order.id', "3.0", "null"]),
                (["-"], ["", "", "", ""]),
            ],
            hit_policy="FIRST",
        )
    )
    assert outputs(table, order={"amount": 10, "id": "A1"}, fee=2) == [
        {"total": 17.0, "label": "order A1", "count": 3, "none": None}
    ]
    assert outputs(table, order={"amount": 0, "id": "A1"}, fee=2) == [{}]


def test_an_output_that_fails_its_typeref_names_the_cell() -> None:
    table = one(decision_table([("A", "a", None)], [("n", "integer")], [(["-"], ["a / 2"])]))
    with pytest.raises(
        DecisionFailed,
        match=r"rule 'DecisionRule_1' \(row 1\), output entry "
        r"'a / 2' of output 'n': 1.5 \(number\) is not a valid integer",
    ):
        table.evaluate({"a": 3})


def test_a_table_without_inputs_matches_every_rule() -> None:
    table = one(
        decision_table(
            [],
            [("x", "integer")],
            [([], ["1"]), ([], ["2"])],
            hit_policy="COLLECT",
            aggregation="SUM",
        )
    )
    assert map_result(table.evaluate({}), "singleEntry") == 3


def test_a_single_unnamed_output_is_keyed_by_its_id() -> None:
    table = one(decision_table([("A", "a", None)], [("", "string")], [(["-"], ['"yes"'])]))
    assert outputs(table, a=1) == [{"Output_1": "yes"}]
    assert map_result(table.evaluate({"a": 1}), "singleEntry") == "yes"


def test_trivial_juel_input_expressions_read_like_feel() -> None:
    xml = decision_table([("S", "${season}", None)], [("x", None)], [(['"Fall"'], ["1"])])
    xml = xml.replace(
        '<inputExpression id="InputExpression_1">',
        '<inputExpression id="InputExpression_1" expressionLanguage="juel">',
    )
    assert outputs(one(xml), season="Fall") == [{"x": 1}]


# --- result mappings ------------------------------------------------------------------------

TWO_OUTPUTS = one(
    decision_table(
        AMOUNT,
        [("a", None), ("b", None)],
        [(["-"], ["1", "2"]), (["> 5"], ["3", "4"])],
        hit_policy="RULE ORDER",
    )
)


def test_result_list_and_single_result() -> None:
    small = TWO_OUTPUTS.evaluate({"amount": 1})
    assert map_result(small) == [{"a": 1, "b": 2}]
    assert map_result(small, "singleResult") == {"a": 1, "b": 2}
    big = TWO_OUTPUTS.evaluate({"amount": 10})
    assert map_result(big, "resultList") == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]


def test_single_entry_refuses_two_outputs() -> None:
    with pytest.raises(DecisionResultError) as caught:
        map_result(TWO_OUTPUTS.evaluate({"amount": 1}), "singleEntry")
    assert str(caught.value) == (
        "decision 'decision': mapDecisionResult singleEntry needs at most one matched rule "
        "with one output value, but the matched rule has several output values (a, b)"
    )
    assert isinstance(caught.value, DecisionFailed)


def test_single_result_refuses_two_rules() -> None:
    with pytest.raises(
        DecisionResultError,
        match=r"singleResult needs at most one matched "
        r"rule, but 2 rules matched \(DecisionRule_1, DecisionRule_2\)",
    ):
        map_result(TWO_OUTPUTS.evaluate({"amount": 10}), "singleResult")


def test_collect_entries_refuses_two_outputs() -> None:
    with pytest.raises(
        DecisionResultError,
        match=r"collectEntries needs the values of one "
        r"output only, but it has values for several outputs \(a, b\)",
    ):
        map_result(TWO_OUTPUTS.evaluate({"amount": 1}), "collectEntries")


def test_result_modes_are_named_as_camunda_names_them() -> None:
    assert result_mode(None) is ResultMode.RESULT_LIST
    assert result_mode("singleEntry") is ResultMode.SINGLE_ENTRY
    with pytest.raises(InvalidDefinition, match="mapDecisionResult 'single' is not one of"):
        result_mode("single")


# --- literal expressions and DRDs -----------------------------------------------------------

LITERAL = """  <decision id="discount" name="Discount">
    <informationRequirement id="InformationRequirement_1">
      <requiredDecision href="#decision" />
    </informationRequirement>
    <variable id="InformationItem_1" name="discount" typeRef="double" />
    <literalExpression id="LiteralExpression_discount">
      <text>if_big * 0.1 + base</text>
    </literalExpression>
  </decision>
"""


def test_a_literal_expression_decision_reads_a_required_table() -> None:
    table = table_decision(
        AMOUNT, [("if_big", "integer")], [(["> 100"], ["amount"]), (["<= 100"], ["0"])]
    )
    file = parse_dmn(definitions(table + LITERAL))
    result = file.decision("discount").evaluate({"amount": 500, "base": 1})
    assert result.entries == [{"discount": 51.0}]
    assert map_result(result, "singleEntry") == 51.0
    assert result.hit_policy is None and result.rules[0].rule_id == "LiteralExpression_discount"


def test_a_multiple_result_required_decision_gives_lists() -> None:
    table = table_decision(
        AMOUNT, [("tag", "string")], [(["-"], ['"a"']), (["> 1"], ['"b"'])], hit_policy="COLLECT"
    )
    counter = table_decision(
        [("Tags", "tag", None)],
        [("hasB", "boolean")],
        [(["? = tagsAB"], ["true"]), (["-"], ["false"])],
        key="counter",
        requires=["decision"],
        hit_policy="FIRST",
    )
    file = parse_dmn(definitions(table + counter))
    result = file.decision("counter").evaluate({"amount": 5, "tagsAB": ["a", "b"]})
    assert result.inputs[0].value == ["a", "b"]
    assert result.entries == [{"hasB": True}]


# --- fuzz -----------------------------------------------------------------------------------

ODD_VALUES: list[Any] = [
    None,
    True,
    0,
    -3,
    2.5,
    10**30,
    float("inf"),
    "",
    "Fall",
    "2020-01-01T10:00:00",
    date(2020, 1, 1),
    datetime(2020, 1, 1),
    [1, 2],
    {"amount": 5},
    object(),
]


def test_fuzz__any_values_give_a_result_or_decision_failed() -> None:
    rng = random.Random(5)
    decisions = [DISH.decision("dish"), DISH.decision("beverages"), BONUS]
    names = [
        "season",
        "guestCount",
        "guestsWithChildren",
        "order",
        "memberSince",
        "tier",
        "loyaltyBonus",
    ]
    outcomes = {"result": 0, "failed": 0}
    for _ in range(300):
        variables = {n: rng.choice(ODD_VALUES) for n in names if rng.random() < 0.9}
        for decision in decisions:
            try:
                result = decision.evaluate(variables)
            except DecisionFailed as exc:
                assert str(exc).startswith("decision '")
                outcomes["failed"] += 1
                continue
            outcomes["result"] += 1
            for mode in ResultMode:
                try:
                    map_result(result, mode)
                except DecisionResultError:
                    pass
    assert outcomes["result"] > 10 and outcomes["failed"] > 10

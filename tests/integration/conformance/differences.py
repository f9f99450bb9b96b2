"""Where this engine deliberately differs from a peer, pinned check by check.

docs/bpmn.md ("Differences from other engines") explains each. A documented difference whose
check starts to agree with the peer fails the scenario too, so the list stays true.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: manifest.json's models the importer refuses: case id -> the start of the refusal (after
#: "line N: "). A model listed here that compiles fails the test until it is removed; a model
#: of that manifest refused and not listed fails too. (The other manifest's refusals are read
#: at run time, see ``corpus.Manifest.pinned``.)
OUTCOMES: dict[str, str] = {}


@dataclass(frozen=True)
class Difference:
    """A check where this engine deliberately gives ``engine`` instead of the peer's value."""

    engine: Any
    reason: str


PASS_THROUGH = (
    "a plain bpmn:task is a pass-through here (Spiff runs it as a manual step the "
    "test drives), so the instance runs to its end at start: 'not ready' steps and "
    "the step-by-step order cannot be reproduced, only the happens-before "
    "constraints of the joins"
)
JOIN_DISCARD = (
    "BPMN token semantics: a parallel join waits for a token on every incoming flow; "
    "bpmn-elements counts a discarded (not taken) flow as arrived"
)
SPAWNED_END = (
    "a token reaching an end event while tokens spawned by its non-interrupting "
    "boundaries or event subprocesses are alive waits there ('until spawned tokens "
    "end') and completes last; Camunda completes the end event at once"
)
EXCEPTION_CLASS = (
    "a handler's exception is never matched to an error boundary by its class "
    "name: only bpm.BpmnError(code) is caught; the exception fails the task, "
    "and the instance is FAILED with an incident"
)
FAILED_INCIDENT = (
    "after its retries a failing task's token is FAILED and, with no saga, the "
    "instance FAILED with an open incident (an operator can retry); Camunda "
    "keeps the instance running at the task"
)
TERMINATE_STATE = (
    "a terminate end event at top level cancels the other tokens and completes "
    "the instance (state COMPLETED, engine event ScopeTerminated)"
)
REVERSE_ORDER = (
    "compensation runs strictly one at a time in reverse success order "
    "(undoBookFlight, then undoBookHotel); Camunda opens both handlers together "
    "and the peer test completes undoBookHotel first"
)
TX_ONE_AT_A_TIME = (
    "a cancel end event compensates the transaction strictly one handler at a time in "
    "reverse success order (undoChargeCard, undoBookFlight, then each undoBookHotel); "
    "Camunda opens every handler together and the peer test completes the five "
    "undoBookHotel tasks first, so the run stops with the first undoBookHotel open"
)
THROW_WAITS = (
    "a compensation throw event waits (WAITING token) until its compensation is "
    "done, so it is active next to the handler; the peer step queries tasks only"
)

_TX_NOTHING = "nothing to complete at undoBookHotel (active: ['failure', 'undoBookFlight'])"

#: scenario id -> check -> the documented difference. A check is a manifest field without its
#: ``expected_`` prefix (``final_state``, ``completed_in_order``, ...) or ``step N: TEXT`` (N
#: counted from 1 in the scenario's ``harness``), with `` [Note]`` for what an annotation of
#: the step claims (``steps.Note``).
DIFFERENCES: dict[str, dict[str, Difference]] = {
    "parallel-multiple-splits-and-joins": {
        "step 3: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
        "step 6: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
        "step 10: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
        "step 12: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
        "completed_in_order": Difference(
            [
                "sid-57463471-693A-42A2-9EC6-6460BEDECA86",
                "sid-809B2A5A-4907-4CB6-A398-E93855AD6F20",
                "sid-CA089240-802A-4C32-9130-FB1A33DDCCC3",
                "sid-ABD788A3-CD57-4280-A22A-260B3AEEE138",
                "sid-3C0AE49A-7BE9-4D61-B409-AC5794825CDE",
                "sid-70192697-62E0-4F16-BE86-7945E95AC33A",
                "sid-E7B8898A-0D14-4E98-B3D7-736B94EE3FA7",
                "sid-1946C635-7886-4687-844F-C644FA6222B8",
                "sid-F3A979E3-F586-4807-8223-1FAB5A5647B0",
                "sid-51816945-79BF-47F9-BA3C-E95ABAE3D1DB",
            ],
            PASS_THROUGH,
        ),
    },
    "parallel-multiple-splits-and-joins/test2": {
        "step 2: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
        "step 6: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
    },
    "parallel-multiple-splits-and-joins/test3": {
        "step 3: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
        "step 6: expect_not_ready '2 Done'": Difference("completed", PASS_THROUGH),
        "step 8: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
        "step 11: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
    },
    "parallel-then-exclusive": {
        "step 2: expect 2 READY tasks": Difference(0, PASS_THROUGH),
        "step 4: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
    },
    "parallel-then-exclusive/testRunThroughChoiceFirst": {
        "step 3: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
    },
    "parallel-then-exclusive/testRunThroughChoiceThreadCompleteFirst": {
        "step 3: expect_not_ready 'Done'": Difference("completed", PASS_THROUGH),
    },
    "timer-boundary-interrupting-before-join": {
        "completed_in_order": Difference(["userTask"], JOIN_DISCARD),
        "final_state": Difference("waiting", JOIN_DISCARD),
    },
    "timer-boundary-interrupting-before-join/timer fires": {
        "completed_in_order": Difference(["boundTimeoutEvent"], JOIN_DISCARD),
        "final_state": Difference("waiting", JOIN_DISCARD),
    },
    "parallel-join-after-xor-discard": {
        "completed_in_order": Difference(["task"], JOIN_DISCARD),
        "final_state": Difference("waiting", JOIN_DISCARD),
    },
    "scopes-and-events:timer-cycle-noninterrupting-boundary": {
        "completed_in_order": Difference(["timer", "timer", "task"], SPAWNED_END),
        "active_at_end": Difference(["end", "timerFiredTask"], SPAWNED_END),
    },
    "timer-boundary-noninterrupting-two-timers": {
        "step 14: expect_active [thirdTask]": Difference(["theEnd", "thirdTask"], SPAWNED_END),
        "completed_in_order": Difference(
            [
                "escalationTimer1",
                "secondTask",
                "escalatedEnd",
                "escalationTimer2",
                "firstTask",
                "thirdTask",
                "escalatedEnd",
                "theEnd",
            ],
            SPAWNED_END,
        ),
    },
    "scopes-and-events:sig-boundary-non-interrupting": {
        "step 6: expect_active [theUserTask2]": Difference(["theEnd", "theUserTask2"], SPAWNED_END),
        "completed_in_order": Difference(["signal", "theUserTask"], SPAWNED_END),
        "active_at_end": Difference(["theEnd", "theUserTask2"], SPAWNED_END),
    },
    "scopes-and-events:es-message-non-interrupting": {
        "step 5: expect_active [eventSubProcessTask]": Difference(
            ["eventSubProcessTask", "theEnd"], SPAWNED_END
        ),
        "completed_in_order": Difference(
            ["task", "eventSubProcessTask", "eventSubProcessEnd", "subProcess", "theEnd"],
            SPAWNED_END,
        ),
    },
    "error-thrown-by-service-task-caught-by-code/"
    "exception mapped by errorCode = exception class name": {
        "step 2: expect_active [escalatedTask]": Difference([], EXCEPTION_CLASS),
        "step 3: complete escalatedTask": Difference(
            "nothing to complete at escalatedTask (active: [])", EXCEPTION_CLASS
        ),
        "step 4: expect_ended": Difference("FAILED", EXCEPTION_CLASS),
        "completed_in_order": Difference([], EXCEPTION_CLASS),
        "final_state": Difference("error", EXCEPTION_CLASS),
    },
    "failing-service-task-no-boundary-incident": {
        "active_at_end": Difference([], FAILED_INCIDENT),
        "final_state": Difference("error", FAILED_INCIDENT),
    },
    "terminate-end-kills-parallel-branch": {
        "final_state": Difference("completed", TERMINATE_STATE),
    },
    "comp-nested-subprocesses": {
        "step 5: complete undoBookHotel ('Cancel Hotel')": Difference(
            "nothing to complete at undoBookHotel (active: ['throwing', 'undoBookFlight'])",
            REVERSE_ORDER,
        ),
        "step 7: expect_ended": Difference("RUNNING", REVERSE_ORDER),
        "completed_in_order": Difference(
            [
                "bookHotel",
                "bookFlight",
                "endInScopeFlight",
                "scopeFlight",
                "endInScope",
                "scopeHotel",
                "throwCompensation",
                "undoBookFlight",
            ],
            REVERSE_ORDER,
        ),
        "final_state": Difference("waiting", REVERSE_ORDER),
    },
    "comp-activity-inside-subprocess": {
        "step 4: expect_active [undoScopeTask] (single task)": Difference(
            ["throwCompensate", "undoScopeTask"], THROW_WAITS
        ),
    },
    "comp-handler-on-subprocess-boundary": {
        "step 2: expect_active [undoSubprocess] (single task)": Difference(
            ["throwCompensate", "undoSubprocess"], THROW_WAITS
        ),
    },
    "scopes-and-events:tx-cancel-end-waitstate-compensation": {
        "step 4: expect_instances undoBookHotel 5": Difference(0, TX_ONE_AT_A_TIME),
        "step 6: expect_active [failure, undoBookFlight, undoBookHotel]": Difference(
            ["failure", "undoBookFlight"], TX_ONE_AT_A_TIME
        ),
        "step 7: complete undoBookHotel": Difference(_TX_NOTHING, TX_ONE_AT_A_TIME),
        "step 8: complete undoBookHotel": Difference(_TX_NOTHING, TX_ONE_AT_A_TIME),
        "step 9: complete undoBookHotel": Difference(_TX_NOTHING, TX_ONE_AT_A_TIME),
        "step 10: complete undoBookHotel": Difference(_TX_NOTHING, TX_ONE_AT_A_TIME),
        "step 11: complete undoBookHotel": Difference(_TX_NOTHING, TX_ONE_AT_A_TIME),
        "step 13: expect_active [afterCancellation]": Difference(
            ["failure", "undoBookHotel"], TX_ONE_AT_A_TIME
        ),
        "step 14: signal afterCancellation": Difference(
            "no token waits at afterCancellation for message 'afterCancellation'",
            TX_ONE_AT_A_TIME,
        ),
        "step 15: expect_ended": Difference("RUNNING", TX_ONE_AT_A_TIME),
        "completed_in_order": Difference(
            [
                *(["bookHotel"] * 5),
                "bookFlight",
                "askCustomer",
                "chargeCard",
                "undoChargeCard",
                "undoBookFlight",
            ],
            TX_ONE_AT_A_TIME,
        ),
        "compensations_in_order": Difference(
            ["undoChargeCard", "undoBookFlight", "undoBookHotel"], TX_ONE_AT_A_TIME
        ),
        "final_state": Difference("waiting", TX_ONE_AT_A_TIME),
    },
}

"""What a node refers to outside its own graph: the DMN decision a business rule task
evaluates and the process a call activity starts, each with the binding that picks the
deployed version. Part of the compiled graph (``model`` re-exports these)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from bpm.definitions.assignments import Text
from bpm.expressions import Expression


class DecisionBinding(StrEnum):
    """Which deployed version of a decision a business rule task evaluates."""

    LATEST = "latest"
    VERSION = "version"
    VERSION_TAG = "versionTag"
    #: The one deployed with the process (``bpm.engine.semantics.decisions.find``).
    DEPLOYMENT = "deployment"


@dataclass(frozen=True)
class DecisionRef:
    """A business rule task's decision: its key, the version binding, and how the result
    is shaped before it is stored (Camunda's ``mapDecisionResult``)."""

    key: str
    binding: DecisionBinding = DecisionBinding.LATEST
    version: int | None = None
    version_tag: str | None = None
    map_result: str = "resultList"


class CallBinding(StrEnum):
    """Which deployed version of the called process a call activity starts."""

    LATEST = "latest"
    VERSION = "version"
    VERSION_TAG = "versionTag"
    #: The one deployed with the calling process (else the latest deployed before it).
    DEPLOYMENT = "deployment"


@dataclass(frozen=True)
class CallMapping:
    """One ``in`` or ``out`` of a call activity: a variable copied across the call.

    ``source`` names a variable of the side it is read from, ``expression`` computes the
    value there instead; ``target`` names the variable set on the other side. ``all``:
    every variable (``local``: only the calling token's own scope, for an ``in``; for an
    ``out``, the variables are set on the call activity's own scope rather than the
    instance's)."""

    target: str | None = None
    source: str | None = None
    expression: Expression | None = None
    all: bool = False
    local: bool = False


@dataclass(frozen=True)
class CallSpec:
    """A call activity's process: its key (or an expression giving it), which version,
    what goes in, what comes back, and the child's business key."""

    process: Text
    binding: CallBinding = CallBinding.LATEST
    #: ``version`` binding: a number, or an expression evaluated when the call starts.
    version: Text | None = None
    version_tag: str | None = None
    inputs: tuple[CallMapping, ...] = ()
    outputs: tuple[CallMapping, ...] = ()
    business_key: Expression | None = None
    #: The called instance gets the caller's business key (Camunda's
    #: ``camunda:in businessKey="#{execution.processBusinessKey}"``).
    business_key_from_caller: bool = False
    #: A handler that maps variables across the call (Camunda's ``variableMappingClass``):
    #: run before the call with the caller's variables, its result goes in; run after it with
    #: the called instance's, its result comes back.
    mapping: str | None = None

"""One exception hierarchy for everything bpm raises.

Every error carries a message a user can act on: what is wrong and where (element id, variable
name, instance id). Constructors pass every argument to ``Exception.__init__`` so the errors
survive pickling (Celery serialises them) and ``str()`` returns the message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class BpmError(Exception):
    """Root of every error bpm raises."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else self.__class__.__doc__ or ""


# --- definitions -------------------------------------------------------------------------------


class DefinitionError(BpmError):
    """A process definition is invalid; nothing was deployed."""


class InvalidDefinition(DefinitionError):
    """The definition document breaks a rule; ``element`` names the offending element.

    A message listing several problems, one per line, names each line's element in
    ``elements`` (line -> element id), so an editor can point at every one of them.
    """

    def __init__(
        self,
        message: str,
        element: str | None = None,
        elements: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message, element, dict(elements or {}))
        self.element = element
        self.elements = dict(elements or {})

    @classmethod
    def joined(cls, errors: Sequence[InvalidDefinition]) -> InvalidDefinition:
        """Several problems as one error, one line each, each line's element named."""
        if len(errors) == 1:
            return errors[0]
        return cls(
            "\n".join(str(exc) for exc in errors),
            errors[0].element,
            {str(exc): exc.element for exc in errors if exc.element is not None},
        )

    def element_of(self, line: str) -> str | None:
        """The element the problem ``line`` of the message is about, if known."""
        found = self.elements.get(line)
        if found is None and self.element is not None and "\n" not in str(self):
            return self.element
        return found


class InvalidExpression(DefinitionError):
    """A condition or timer expression does not parse or uses something unsafe."""


class UnknownProcess(BpmError):
    """No definition is deployed under that process key."""


# --- runtime -----------------------------------------------------------------------------------


class ExpressionEvalError(BpmError):
    """An expression failed while it was evaluated over an instance's variables."""


class MissingVariable(ExpressionEvalError):
    """An expression read a variable the instance does not have."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message, name)
        self.name = name


class DecisionFailed(BpmError):
    """A DMN decision could not give a result for these inputs (a hit policy was broken, a
    variable was missing, a value had the wrong type); ``decision`` is the decision key and
    ``inputs`` the input values evaluated before it failed, by input id."""

    def __init__(
        self, message: str, decision: str | None = None, inputs: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(message, decision, inputs)
        self.decision = decision
        self.inputs = dict(inputs) if inputs is not None else {}


class DecisionResultError(DecisionFailed):
    """A decision's result does not fit the shape a result mapping asks for (``singleEntry``
    with two outputs, ``singleResult`` with two matched rules, ...)."""


class BadVariables(BpmError):
    """Variables that are not a JSON object of JSON values, or too large."""

    def __init__(self, message: str, name: str | None = None) -> None:
        super().__init__(message, name)
        self.name = name


class FormInvalid(BadVariables):
    """Submitted variables break the form of a user task or start event: ``problems`` has one
    line per field and rule broken (``name`` is the first such field); nothing was changed."""

    def __init__(self, message: str, name: str | None = None, problems: Sequence[str] = ()) -> None:
        BpmError.__init__(self, message, name, tuple(problems))
        self.name = name
        self.problems = tuple(problems)


class NotFound(BpmError):
    """An instance, token or task id that does not exist."""


class TaskNotFound(NotFound):
    """No external task has that id."""


class TaskLockError(BpmError):
    """A worker acted on a task it does not hold: nothing was changed."""


class WrongWorker(TaskLockError):
    """The task is locked by another worker."""


class LockExpired(TaskLockError):
    """The worker's lock ran out; the task may already belong to another worker."""


class TaskNotLocked(TaskLockError):
    """The task is not locked (finished, cancelled, or waiting for a fetch)."""


class InvalidOperation(BpmError):
    """An operator action that does not apply to the current state (nothing was changed)."""


class InputRefused(InvalidOperation):
    """A text or number that cannot be stored as given (too long, out of range, holding a
    NUL); ``field`` names it where known. Nothing was changed, and sending it again will not
    change that."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message, field)
        self.field = field


class TaskClaimed(InvalidOperation):
    """A user task is claimed by someone else."""


class NoMatchingWait(NotFound):
    """A correlated message matched no token waiting for it."""


class AmbiguousCorrelation(InvalidOperation):
    """A correlated message matched several waiting tokens and did not ask for all."""


class BpmnError(BpmError):
    """Raised by a handler to signal a business error with a code (BPMN error).

    It follows a matching error boundary event; without one it fails the token with no retries.
    ``variables`` are set on the instance with it, so the boundary's path can see why.
    """

    def __init__(
        self, code: str, message: str = "", variables: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(code, message, variables)
        self.code = code
        self.message = message
        self.variables = dict(variables) if variables is not None else {}

    def __str__(self) -> str:
        return f"BPMN error {self.code}" + (f": {self.message}" if self.message else "")


class ConfigError(BpmError):
    """The environment or command line names something that cannot be used."""


# --- callers of the HTTP API ---------------------------------------------------------------


class InvalidRequest(BpmError):
    """A request the API cannot take as sent (a malformed field, a refused value type)."""


class AccessDenied(BpmError):
    """A caller the API refuses; nothing was changed."""


class NotAuthenticated(AccessDenied):
    """No credential, or one that does not verify."""


class Forbidden(AccessDenied):
    """A verified caller whose role or limits do not allow this call."""


class DeploymentInvalid(InvalidDefinition):
    """Files of one deployment that do not parse; ``problems`` has each refused file's
    problems, one ``line N: ...`` per entry. Nothing of the deployment was stored."""

    def __init__(
        self,
        message: str,
        problems: Mapping[str, Sequence[str]],
        causes: Mapping[str, InvalidDefinition] | None = None,
    ) -> None:
        BpmError.__init__(self, message, {k: list(v) for k, v in problems.items()})
        self.element = None
        self.problems = {name: list(lines) for name, lines in problems.items()}
        #: Each refused file's own error, for a caller that deployed one file and answers
        #: with that file's error as it is (its element included).
        self.causes = dict(causes or {})


class NotSupported(BpmError):
    """Something Camunda has and bpm does not (yet), such as signals; nothing was changed."""

"""Safe expressions over process variables: sequence-flow conditions and timer ``${expr}`` values.

Expressions are written by whoever authors a process definition and evaluated inside the engine,
so they must never reach Python internals. Two walls keep them in: :func:`compile_expression`
parses once at deploy time and rejects every AST node, attribute or call outside a small
whitelist; evaluation runs on ``simpleeval`` with its node table cut down to that same whitelist,
``a.b`` meaning ``a["b"]`` on JSON objects only (never ``getattr``), and simpleeval's size limits
on strings and numbers left on.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

import simpleeval

from bpm.errors import ExpressionEvalError, InvalidExpression, MissingVariable
from bpm.juel_methods import (
    RESERVED,
    VALUE_METHODS,
    BeanRef,
    CallScope,
    ExecutionView,
    Invocation,
    MethodError,
    call_method,
    check_call,
    getter_key,
)
from bpm.juel_syntax import execution_reads, translate
from bpm.juel_values import DateTime, Spin, plain

MAX_SOURCE_LENGTH = 2000
MAX_DEPTH = 50
MAX_NODES = 500

CONSTANTS: Mapping[str, Any] = {"true": True, "false": False, "null": None}
FUNCTIONS: Mapping[str, Any] = {
    **{f.__name__: f for f in (abs, bool, float, int, len, max, min, round, str)},
    "empty": lambda value: _is_empty(value),
    # JUEL's execution.getVariable('x'): the variable, or null when there is none (the
    # evaluator binds it to the variables it evaluates over).
    "getVariable": lambda name: None,
    # Camunda's date functions (a Joda DateTime) and Spin's JSON and XML readers.
    "dateTime": lambda: None,
    "now": lambda: None,
    "S": Spin.of,
    "JSON": Spin.json,
    "XML": Spin.xml,
}

# fmt: off
_SYMBOLS: Mapping[type[ast.AST], str] = {
    ast.Not: "not", ast.USub: "-", ast.UAdd: "+", ast.Add: "+", ast.Sub: "-", ast.Mult: "*",
    ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<",
    ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.In: "in", ast.NotIn: "not in",
}
_ALLOWED = (
    ast.Expression, ast.BoolOp, ast.UnaryOp, ast.BinOp, ast.Compare, ast.Name, ast.Load,
    ast.Constant, ast.List, ast.Tuple, ast.Attribute, ast.Subscript, ast.Slice, ast.Call,
    ast.And, ast.Or, *_SYMBOLS,
)
_CONSTANT_TYPES = (bool, int, float, str, type(None))
_DESCRIPTIONS: Mapping[type[ast.AST], str] = {
    ast.Lambda: "a lambda", ast.ListComp: "a comprehension", ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension", ast.GeneratorExp: "a comprehension",
    ast.JoinedStr: "an f-string", ast.NamedExpr: "an assignment (:=)", ast.Dict: "a dict literal",
    ast.Set: "a set literal", ast.IfExp: "a conditional (x if c else y)", ast.Starred: "a '*'",
    ast.keyword: "a keyword argument", ast.Pow: "the '**' operator", ast.Is: "'is'",
    ast.IsNot: "'is not'", ast.MatMult: "the '@' operator", ast.Invert: "the '~' operator",
}
_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "a boolean"), ((int, float), "a number"), (str, "a string"), (dict, "an object"),
    ((list, tuple), "a list"), (type(None), "null"),
)
# fmt: on
_WRAPPED = re.compile(r"\s*[$#]\{(.*)\}\s*", re.DOTALL)


class _Rejected(Exception):
    """Internal: why a runtime step failed, before the expression's context is added."""


@dataclass(frozen=True)
class Expression:
    """A validated expression; evaluate it as often as needed, it holds no per-call state."""

    source: str
    python: str
    names: frozenset[str]
    tree: ast.Expression = field(repr=False, compare=False)  # made by compile_expression
    where: str = ""
    kind: str = "condition"
    scope: CallScope = CallScope.INLINE
    #: The beans it calls (``bean.method(...)``), checked before an instance starts.
    beans: frozenset[str] = frozenset()

    def evaluate(self, variables: Mapping[str, Any], invocation: Invocation | None = None) -> Any:
        """Evaluate over ``variables``; any failure becomes an ExpressionEvalError with context.

        ``invocation``: the ``execution`` (writable, with its facts), ``task`` and beans of a
        task that runs the expression; without one, ``execution`` only reads the variables."""
        try:
            evaluator = _Evaluator(variables, invocation)
            return plain(evaluator.eval(self.python, previously_parsed=self.tree.body))
        except MissingVariable as exc:
            raise MissingVariable(f"{self._context()} {exc}", exc.name) from exc.__cause__
        except (_Rejected, MethodError) as exc:
            raise ExpressionEvalError(f"{self._context()} failed: {exc}") from exc.__cause__ or exc
        except Exception as exc:  # simpleeval's size limits, errors inside len(), int(), ...
            raise ExpressionEvalError(f"{self._context()} failed: {exc}") from exc

    def _context(self) -> str:
        return f"{self.where}: {self.kind} {_quote(self.source)}"


def compile_expression(
    source: str, *, where: str, kind: str = "condition", scope: CallScope = CallScope.INLINE
) -> Expression:
    """Parse and validate once (at deploy time) so bad expressions never reach a running token.

    ``where`` names the owning element (e.g. ``"flow 'f_big'"``) and ``kind`` what the
    expression is (``"condition"``, ``"timer expression"``); both appear in every error.
    ``scope`` says whether it runs as a task of its own (and so may set variables and call
    beans) or inside the engine's transaction.
    """
    if not isinstance(source, str):
        raise InvalidExpression(f"{where}: {kind} must be a string, not {_json_type(source)}")
    context = f"{where}: {kind} {_quote(source)}"
    if len(source) > MAX_SOURCE_LENGTH:
        raise InvalidExpression(
            f"{context} is {len(source)} characters long; the limit is {MAX_SOURCE_LENGTH}"
        )
    wrapped = _WRAPPED.fullmatch(source)
    python, shown = (
        translate(execution_reads(wrapped[1]), context) if wrapped else (source.strip(), "")
    )
    if not python:
        raise InvalidExpression(f"{context} is empty")
    tree = _parse(python, shown, context)
    if wrapped:  # Camunda form: each '~' stood in for a '!' and now becomes 'not'
        for node in ast.walk(tree):
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
                node.op = ast.Not()
        python = ast.unparse(tree)
    names, beans = _validate(tree, context, kind, scope)
    return Expression(source, python, names - RESERVED, tree, where, kind, scope, beans)


def evaluate_condition(expr: Expression, variables: Mapping[str, Any]) -> bool:
    """Evaluate a flow condition; only a real bool counts, so ``"no"`` or ``1`` never route."""
    result = expr.evaluate(variables)
    if not isinstance(result, bool):
        raise ExpressionEvalError(
            f"{expr._context()} gave {_json_type(result)} {result!r:.80}, not true or false"
        )
    return result


def _is_empty(value: Any) -> bool:
    """JUEL's ``empty``: null, an empty string, list or object."""
    return value is None or (isinstance(value, str | list | tuple | dict) and len(value) == 0)


def _parse(python: str, shown: str, context: str) -> ast.Expression:
    """``ast.parse`` with its errors rewritten as a column the author can find.

    ``shown`` is the translated ``${...}`` body the column counts in, or ``""`` if untranslated.
    """
    try:
        return ast.parse(python, mode="eval")
    except SyntaxError as exc:
        line = exc.lineno or 1
        end = len(python.splitlines()[-1]) + 1
        column = exc.offset if exc.offset and exc.offset > 0 else end
        at = f"column {column}" if line == 1 else f"line {line} column {column}"
        seen = f" of {_quote(shown)}" if shown else ""
        raise InvalidExpression(f"{context} does not parse: {exc.msg} at {at}{seen}") from exc
    except (ValueError, RecursionError, MemoryError) as exc:
        raise InvalidExpression(f"{context} does not parse: {exc}") from exc


def _validate(
    tree: ast.Expression, context: str, kind: str, scope: CallScope
) -> tuple[frozenset[str], frozenset[str]]:
    """Whitelist walk; also enforces size limits and returns the variable names read and the
    beans called."""
    names: set[str] = set()
    beans: set[str] = set()
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    count = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if depth > MAX_DEPTH or count > MAX_NODES:
            limit = f"deeper than {MAX_DEPTH}" if depth > MAX_DEPTH else f"over {MAX_NODES} nodes"
            raise InvalidExpression(f"{context} is too complex ({limit})")
        _check_node(node, context, kind, scope)
        if isinstance(node, ast.Name) and node.id not in CONSTANTS:
            names.add(node.id)
        children: list[ast.AST] = list(ast.iter_child_nodes(node))
        if isinstance(node, ast.Call):
            children = list(node.args)
            if isinstance(node.func, ast.Attribute):
                children.append(node.func.value)
                receiver = node.func.value
                method, arguments = node.func.attr, len(node.args)
                if isinstance(receiver, ast.Name) and _bean_call(receiver.id, method, arguments):
                    beans.add(receiver.id)
        stack.extend((child, depth + 1) for child in children)
    return frozenset(names), frozenset(beans)


def _bean_call(receiver: str, method: str, arguments: int) -> bool:
    """A call that can only be a bean's (a getter may read a variable's field instead)."""
    plain_name = receiver not in RESERVED and receiver not in CONSTANTS
    getter = getter_key(method) is not None and arguments == 0
    return plain_name and method not in VALUE_METHODS and not getter


def _check_node(node: ast.AST, context: str, kind: str, scope: CallScope) -> None:
    """Reject one node that is outside the whitelist, with a reason an author understands."""
    if not isinstance(node, _ALLOWED):
        what = _DESCRIPTIONS.get(type(node), f"'{type(node).__name__}'")
        raise InvalidExpression(f"{context} uses {what}, which {kind}s may not use")
    if isinstance(node, ast.Constant) and not isinstance(node.value, _CONSTANT_TYPES):
        raise InvalidExpression(f"{context} uses a {type(node.value).__name__} literal")
    if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
        raise InvalidExpression(
            f"{context} reads '.{node.attr}'; names starting with '_' are not allowed"
        )
    if not isinstance(node, ast.Call):
        return
    if node.keywords:
        raise InvalidExpression(f"{context} uses a keyword argument, which {kind}s may not use")
    if isinstance(node.func, ast.Attribute):
        value, method = node.func.value, node.func.attr
        receiver = value.id if isinstance(value, ast.Name) else None
        why = check_call(receiver, method, scope, len(node.args))
        if why is not None:
            column = (node.func.end_col_offset or 0) - len(method) + 1
            raise InvalidExpression(f"{context} {why} (at column {column})")
        return
    func = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
    if func not in FUNCTIONS:
        raise InvalidExpression(
            f"{context} uses a function call '{func}', which {kind}s may not use "
            f"(allowed: {', '.join(sorted(FUNCTIONS))})"
        )


class _Evaluator(simpleeval.SimpleEval):  # type: ignore[misc]  # simpleeval is untyped
    """simpleeval cut down to the whitelist, with names and fields resolved from JSON only."""

    nodes: dict[type[ast.AST], Callable[[Any], Any]]

    def __init__(self, variables: Mapping[str, Any], invocation: Invocation | None) -> None:
        ops = {k: _guarded(_SYMBOLS[k], simpleeval.DEFAULT_OPERATORS[k]) for k in _SYMBOLS}
        self._invocation = invocation
        functions = dict(
            FUNCTIONS,
            getVariable=self._variable_or_null,
            dateTime=self._now,
            now=self._now,
        )
        super().__init__(operators=ops, functions=functions, names={})
        self.variables = variables
        self.nodes = {k: v for k, v in self.nodes.items() if k in _ALLOWED}
        self.nodes[ast.Call] = self._eval_method_or_function
        self.nodes[ast.List] = lambda node: [self._eval(e) for e in node.elts]
        self.nodes[ast.Tuple] = lambda node: tuple(self._eval(e) for e in node.elts)

    @property
    def invocation(self) -> Invocation:
        """The task's ``execution`` and beans; without a task, a read-only ``execution`` over
        the variables (made only when an expression uses it)."""
        if self._invocation is None:
            self._invocation = Invocation(ExecutionView(self.variables))
        return self._invocation

    def _now(self) -> DateTime:
        return DateTime.now(self.invocation.now)

    def _variable_or_null(self, name: Any) -> Any:
        if not isinstance(name, str):
            _fail(f"getVariable takes a variable name, got {_json_type(name)}")
        return self.invocation.execution.get(name)

    def _eval_method_or_function(self, node: ast.Call) -> Any:
        args = [self._eval(a) for a in node.args]
        if isinstance(node.func, ast.Name):
            return self.functions[node.func.id](*args)
        assert isinstance(node.func, ast.Attribute)  # the validator allows nothing else
        value = node.func.value
        if isinstance(value, ast.Name) and _bean_call(value.id, node.func.attr, len(args)):
            receiver: Any = self._bean(value.id)
        elif isinstance(value, ast.Name) and self._is_bean(value.id):
            receiver = self._bean(value.id)
        else:
            receiver = self._eval(value)
        is_task = receiver is self.invocation.task and receiver is not None
        return call_method(receiver, node.func.attr, args, task=is_task)

    def _is_bean(self, name: str) -> bool:
        beans = self.invocation.beans
        return name not in self.variables and beans is not None and name in beans

    def _bean(self, name: str) -> Any:
        if name in self.variables:
            return self.variables[name]
        found = self.invocation.beans.get(name) if self.invocation.beans else None
        if found is None:
            raise MissingVariable(f"calls bean '{name}', which is not registered", name)
        return BeanRef(name, found)

    def _eval_name(self, node: ast.Name) -> Any:
        if node.id in CONSTANTS:
            return CONSTANTS[node.id]
        if node.id == "execution" and node.id not in self.variables:
            return self.invocation.execution
        if node.id == "task" and self.invocation.task is not None:
            return self.invocation.task
        try:
            return self.variables[node.id]
        except KeyError as exc:
            message = f"reads variable '{node.id}', which the instance does not have"
            raise MissingVariable(message, node.id) from exc

    def _eval_attribute(self, node: ast.Attribute) -> Any:
        container = self._eval(node.value)
        if isinstance(container, ExecutionView | Spin | DateTime):  # JUEL's bean properties
            getter = "get" + node.attr[:1].upper() + node.attr[1:]
            return call_method(container, getter, [], task=container is self.invocation.task)
        if not isinstance(container, dict):
            owner = ast.unparse(node.value)
            _fail(f"{owner} is {_json_type(container)}, so it has no field '{node.attr}'")
        return _lookup(container, node.attr, node.value)

    def _eval_subscript(self, node: ast.Subscript) -> Any:
        return _lookup(self._eval(node.value), self._eval(node.slice), node.value)


def _guarded(symbol: str, operator: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap an operator so a type clash reads in JSON terms, not Python class names."""

    def apply(*operands: Any) -> Any:
        try:
            return operator(*operands)
        except ZeroDivisionError as exc:
            _fail("division by zero", exc)
        except TypeError as exc:
            _fail(f"cannot use '{symbol}' on {' and '.join(map(_json_type, operands))}", exc)

    return apply


def _lookup(container: Any, key: Any, owner: ast.expr) -> Any:
    """Item access whose errors say which key of which value was missing."""
    try:
        return container[key]
    except KeyError as exc:
        _fail(f"{ast.unparse(owner)} has no key {key!r}", exc)
    except IndexError as exc:
        _fail(f"{ast.unparse(owner)} has no index {key!r} (length {len(container)})", exc)
    except TypeError as exc:
        _fail(f"cannot index {ast.unparse(owner)} ({_json_type(container)}) with {key!r}", exc)


def _fail(reason: str, cause: BaseException | None = None) -> NoReturn:
    raise _Rejected(reason) from cause


def _json_type(value: Any) -> str:
    """Describe a value in JSON terms, which is what authors of definitions think in."""
    return next((name for t, name in _JSON_TYPES if isinstance(value, t)), "a value")


def _quote(text: str) -> str:
    return '"' + text.replace('"', '\\"') + '"' if len(text) <= 200 else f'"{text[:200]}..."'

"""Build a definition document from Python.

The builder emits exactly the JSON document that ``bpm deploy FILE.json`` reads, so a process
built in code and one written by hand deploy to the same definition (same checksum).
"""

from __future__ import annotations

import itertools
from typing import Any, Self


class ProcessBuilder:
    """Collects nodes and flows; ``build()`` returns the document.

    >>> doc = (ProcessBuilder("greet").start("start").service_task("hello", handler="say_hello")
    ...        .end("done").sequence("start", "hello", "done").build())
    """

    def __init__(
        self,
        key: str,
        name: str | None = None,
        saga: str | None = None,
        *,
        history_ttl: int | str | None = None,
    ) -> None:
        """``history_ttl`` is ``historyTimeToLive``: days, or an ISO 8601 duration."""
        self._doc: dict[str, Any] = {"key": key}
        if name is not None:
            self._doc["name"] = name
        if saga is not None:
            self._doc["saga"] = saga
        if history_ttl is not None:
            self._doc["historyTimeToLive"] = history_ttl
        self._nodes: list[dict[str, Any]] = []
        self._flows: list[dict[str, Any]] = []

    def _node(self, node_id: str, node_type: str, **keys: Any) -> Self:
        node: dict[str, Any] = {"id": node_id, "type": node_type}
        node.update({k: v for k, v in keys.items() if v is not None})
        self._nodes.append(node)
        return self

    def start(self, node_id: str = "start") -> Self:
        return self._node(node_id, "startEvent")

    def end(
        self, node_id: str = "end", *, terminate: bool | None = None, error: str | None = None
    ) -> Self:
        return self._node(node_id, "endEvent", terminate=terminate, error=error)

    def service_task(
        self,
        node_id: str,
        *,
        handler: str | None = None,
        topic: str | None = None,
        retry: dict[str, Any] | None = None,
        timeout: str | None = None,
        name: str | None = None,
        priority: int | None = None,
        multi_instance: dict[str, Any] | None = None,
    ) -> Self:
        """A service task run by an in-process ``handler`` or by external workers (``topic``).
        ``multi_instance``: the ``multiInstance`` object (see ``multi_instance``)."""
        return self._node(
            node_id,
            "serviceTask",
            handler=handler,
            topic=topic,
            retry=retry,
            timeout=timeout,
            name=name,
            priority=priority,
            multiInstance=multi_instance,
        )

    def task(self, node_id: str, name: str | None = None) -> Self:
        return self._node(node_id, "task", name=name)

    def manual_task(self, node_id: str, name: str | None = None) -> Self:
        return self._node(node_id, "manualTask", name=name)

    def exclusive_gateway(self, node_id: str, *, default: str | None = None) -> Self:
        return self._node(node_id, "exclusiveGateway", default=default)

    def inclusive_gateway(self, node_id: str, *, default: str | None = None) -> Self:
        """Splits along every flow whose condition holds (the default when none does); with
        several incoming flows, joins once no live token can still reach it."""
        return self._node(node_id, "inclusiveGateway", default=default)

    def parallel_gateway(self, node_id: str) -> Self:
        return self._node(node_id, "parallelGateway")

    def sub_process(
        self,
        node_id: str,
        body: ProcessBuilder,
        name: str | None = None,
        *,
        multi_instance: dict[str, Any] | None = None,
        transaction: bool | None = None,
    ) -> Self:
        """Embed ``body`` (a builder whose key is ignored) as an embedded subprocess
        (``transaction``: a transaction subprocess, left by its ``cancel_boundary`` when a
        ``cancel_end`` inside is reached)."""
        inner = body.build()
        return self._node(
            node_id,
            "subProcess",
            name=name,
            nodes=inner["nodes"],
            flows=inner["flows"],
            multiInstance=multi_instance,
            transaction=transaction,
        )

    def event_sub_process(
        self, node_id: str, body: ProcessBuilder, name: str | None = None
    ) -> Self:
        """Embed ``body`` as an event subprocess (``triggeredByEvent``): its start event (see
        ``trigger_start``) starts it while the scope around it runs; it takes no flows."""
        inner = body.build()
        return self._node(
            node_id,
            "subProcess",
            name=name,
            triggeredByEvent=True,
            nodes=inner["nodes"],
            flows=inner["flows"],
        )

    def trigger_start(
        self,
        node_id: str = "start",
        *,
        error: str | None = None,
        message: str | None = None,
        duration: str | None = None,
        date: str | None = None,
        interrupting: bool = True,
        error_code_variable: str | None = None,
        error_message_variable: str | None = None,
        cycle: str | None = None,
        escalation: str | None = None,
        condition: str | dict[str, Any] | None = None,
        signal: str | None = None,
    ) -> Self:
        """The start event of an event subprocess: one trigger (an error code or ``*``, a
        message name, a timer, or a ``condition``: see ``conditional_event``) and whether it
        interrupts its scope."""
        timer = {
            k: v
            for k, v in (("duration", duration), ("date", date), ("cycle", cycle))
            if v is not None
        }
        return self._node(
            node_id,
            "startEvent",
            error=error,
            escalation=escalation,
            message=message,
            signal=signal,
            timer=timer or None,
            condition=condition,
            interrupting=None if interrupting else False,
            errorCodeVariable=error_code_variable,
            errorMessageVariable=error_message_variable,
        )

    def call_activity(
        self,
        node_id: str,
        *,
        process: str,
        binding: str | None = None,
        version: int | str | None = None,
        version_tag: str | None = None,
        inputs: list[dict[str, Any]] | None = None,
        outputs: list[dict[str, Any]] | None = None,
        business_key: str | None = None,
        inherit_business_key: bool | None = None,
        name: str | None = None,
        multi_instance: dict[str, Any] | None = None,
    ) -> Self:
        """A call activity: starts an instance of ``process`` and waits for it to end.
        ``inputs``/``outputs`` are the ``in``/``out`` lists (``{"source": ..., "target":
        ...}``, ``{"expression": "${...}", "target": ...}``, ``{"all": True}``)."""
        return self._node(
            node_id,
            "callActivity",
            process=process,
            binding=binding,
            version=version,
            versionTag=version_tag,
            name=name,
            businessKey=business_key,
            inheritBusinessKey=inherit_business_key,
            multiInstance=multi_instance,
            **{"in": inputs, "out": outputs},
        )

    def cancel_end(self, node_id: str) -> Self:
        """A cancel end event: only inside a transaction, which then needs a cancel boundary."""
        return self._node(node_id, "endEvent", cancel=True)

    def cancel_boundary(self, node_id: str, *, attached_to: str) -> Self:
        """The cancel boundary event of a transaction (always interrupting)."""
        return self._node(node_id, "boundaryEvent", attachedTo=attached_to, cancel=True)

    def error_boundary(self, node_id: str, *, attached_to: str, error: str = "*") -> Self:
        """An error boundary event on a service task or subprocess; ``error`` is the code it
        catches, ``"*"`` any."""
        return self._node(node_id, "boundaryEvent", attachedTo=attached_to, error=error)

    def timer_boundary(
        self,
        node_id: str,
        *,
        attached_to: str,
        duration: str | None = None,
        date: str | None = None,
        interrupting: bool = True,
        cycle: str | None = None,
    ) -> Self:
        """A timer boundary event on a task or subprocess (``duration``, ``date`` or, firing
        again while the activity is open when not interrupting, ``cycle``)."""
        timer = (
            {"duration": duration}
            if duration is not None
            else {"cycle": cycle}
            if cycle is not None
            else {"date": date}
        )
        return self._node(
            node_id, "boundaryEvent", attachedTo=attached_to, timer=timer, interrupting=interrupting
        )

    def conditional_boundary(
        self,
        node_id: str,
        *,
        attached_to: str,
        condition: str,
        variable_name: str | None = None,
        variable_events: list[str] | None = None,
        interrupting: bool = True,
    ) -> Self:
        """A conditional boundary event: fires when ``condition`` holds as the activity
        starts or after a variable change (filtered as in ``conditional_event``)."""
        return self._node(
            node_id,
            "boundaryEvent",
            attachedTo=attached_to,
            condition=_condition(condition, variable_name, variable_events),
            interrupting=interrupting,
        )

    def conditional_event(
        self,
        node_id: str,
        *,
        condition: str,
        variable_name: str | None = None,
        variable_events: list[str] | None = None,
        name: str | None = None,
    ) -> Self:
        """An intermediate conditional catch event: passes once ``condition`` holds,
        re-evaluated on changes of ``variable_name`` (any when None) of ``variable_events``
        (``create``, ``update``, ``delete``; any when None)."""
        return self._node(
            node_id,
            "conditionalEvent",
            name=name,
            condition=_condition(condition, variable_name, variable_events),
        )

    def timer(self, node_id: str, *, duration: str | None = None, date: str | None = None) -> Self:
        """An intermediate timer catch event: wait ``duration`` or until ``date``."""
        return self._node(node_id, "timerEvent", duration=duration, date=date)

    def user_task(
        self,
        node_id: str,
        *,
        assignee: str | None = None,
        candidate_groups: list[str] | None = None,
        name: str | None = None,
        multi_instance: dict[str, Any] | None = None,
    ) -> Self:
        return self._node(
            node_id,
            "userTask",
            assignee=assignee,
            candidate_groups=candidate_groups,
            name=name,
            multiInstance=multi_instance,
        )

    def receive_task(
        self,
        node_id: str,
        *,
        message: str,
        name: str | None = None,
        multi_instance: dict[str, Any] | None = None,
    ) -> Self:
        return self._node(
            node_id, "receiveTask", message=message, name=name, multiInstance=multi_instance
        )

    def message_event(self, node_id: str, *, message: str, name: str | None = None) -> Self:
        """An intermediate message catch event."""
        return self._node(node_id, "messageEvent", message=message, name=name)

    def signal_event(self, node_id: str, *, signal: str, name: str | None = None) -> Self:
        """An intermediate signal catch event: waits for a broadcast of ``signal``."""
        return self._node(node_id, "signalEvent", signal=signal, name=name)

    def signal_throw(self, node_id: str, *, signal: str, end: bool = False) -> Self:
        """An intermediate signal throw event (``end``: a signal end event)."""
        return self._node(node_id, "endEvent" if end else "signalThrow", signal=signal)

    def signal_boundary(
        self, node_id: str, *, attached_to: str, signal: str, interrupting: bool = True
    ) -> Self:
        return self._node(
            node_id,
            "boundaryEvent",
            attachedTo=attached_to,
            signal=signal,
            interrupting=None if interrupting else False,
        )

    def signal_start(self, node_id: str = "start", *, signal: str) -> Self:
        """A process's signal start event: every broadcast of ``signal`` starts an instance."""
        return self._node(node_id, "startEvent", signal=signal)

    def multi_instance(self, node_id: str, **spec: Any) -> Self:
        """Make an activity already added multi-instance: ``sequential``, ``cardinality``
        (a number or ``${...}``), ``collection`` (a variable name or ``${...}``),
        ``elementVariable``, ``completionCondition``, ``outputCollection`` and
        ``outputElement`` (the JSON format's ``multiInstance`` keys)."""
        node = next(n for n in self._nodes if n["id"] == node_id)
        node["multiInstance"] = spec
        return self

    def mappings(
        self,
        node_id: str,
        *,
        inputs: dict[str, Any] | None = None,
        outputs: dict[str, Any] | None = None,
    ) -> Self:
        """Input and output mappings of a node already added (``${...}`` strings are
        expressions, anything else a literal)."""
        node = next(n for n in self._nodes if n["id"] == node_id)
        if inputs is not None:
            node["inputs"] = inputs
        if outputs is not None:
            node["outputs"] = outputs
        return self

    def flow(
        self, source: str, target: str, *, condition: str | None = None, flow_id: str | None = None
    ) -> Self:
        flow: dict[str, Any] = {
            "id": flow_id or f"{source}__{target}",
            "source": source,
            "target": target,
        }
        if condition is not None:
            flow["condition"] = condition
        self._flows.append(flow)
        return self

    def sequence(self, *node_ids: str) -> Self:
        """Connect the nodes one after another with unconditional flows."""
        for source, target in itertools.pairwise(node_ids):
            self.flow(source, target)
        return self

    def build(self) -> dict[str, Any]:
        return {**self._doc, "nodes": list(self._nodes), "flows": list(self._flows)}


def _condition(
    expression: str, variable_name: str | None, variable_events: list[str] | None
) -> str | dict[str, Any]:
    """The plain expression when nothing filters it, else the object form."""
    if variable_name is None and variable_events is None:
        return expression
    spec: dict[str, Any] = {"expression": expression}
    if variable_name is not None:
        spec["variableName"] = variable_name
    if variable_events is not None:
        spec["variableEvents"] = variable_events
    return spec

"""Signal events of a BPMN file: the ``signalEventDefinition`` of a start, intermediate catch
or throw, end and boundary event, read into the JSON definition's ``signal`` key.

Apart from ``bpmn_events`` (which dispatches here) so each event kind's signal rules are
one place. A signal's name is its ``<signal name>`` declaration (its id without a name), as
Camunda 7 resolves ``signalRef``. A throw's name may be an expression (evaluated over the
thrower's variables); on a catching event it is refused naming the element (bpm finds a
signal's subscriptions by name, docs/bpmn.md), as is ``camunda:async`` on the definition.
``camunda:in`` on a throw passes variables to the recipients, as in Camunda.
"""

from __future__ import annotations

from typing import Any

from bpm.definitions.bpmn_calls import in_mapping
from bpm.definitions.bpmn_declarations import Declarations
from bpm.definitions.bpmn_names import CAMUNDA
from bpm.definitions.bpmn_reader import Reader, reject
from bpm.definitions.bpmn_xml import XmlElement
from bpm.definitions.parse.patterns import MESSAGE_PATTERN

Mapped = dict[str, Any]
TAG = "signalEventDefinition"


def name(
    decl: Declarations,
    event: XmlElement,
    definition: XmlElement,
    *,
    thrown: bool = False,
    ins: list[XmlElement] | None = None,
) -> str:
    """The name of the signal ``definition`` (on ``event``) refers to; a throw's (``thrown``)
    may be an expression, evaluated over the thrower's variables when it throws. ``ins``
    collects the ``camunda:in`` elements of the definition's own extension elements (where
    Camunda Modeler writes a throw's)."""
    reader = Reader(definition)
    ref = reader.attr("signalRef")
    asynchronous = reader.attr("async", CAMUNDA)
    if ins is not None:
        ins.extend(reader.extensions("in", CAMUNDA))
    reader.finish()
    if asynchronous == "true":
        raise reject(
            event,
            'has camunda:async="true" on its signalEventDefinition, which is not supported '
            "yet (bpm delivers every signal in jobs of its own already)",
            "remove camunda:async",
        )
    if not ref:
        raise reject(event, "has a signalEventDefinition without signalRef", "declare a <signal>")
    ref = decl.resolve(ref, decl.signals)
    if ref not in decl.signals:
        raise reject(
            event,
            f"refers to signal {ref!r}, which the file does not declare",
            f'add <signal id="{ref}" name="..."/>',
        )
    found = decl.signals[ref]
    expression = "${" in found or "#{" in found or found.startswith("=")
    if expression and (not thrown or found.startswith("=")):
        raise reject(
            event,
            f"refers to signal {ref!r} named {found!r}: expressions in signal names are not "
            "supported yet where a signal is caught (nor FEEL ones anywhere)",
            "use a fixed signal name",
        )
    if not MESSAGE_PATTERN.match(found):
        raise reject(
            event,
            f"refers to signal {ref!r} named {found!r}, which is not a signal name (1 to 255 "
            "characters, no control characters or spaces at either end)",
            "rename the signal",
        )
    return found


def thrown(decl: Declarations, r: Reader, definition: XmlElement) -> Mapped:
    """The signal a throw or end event broadcasts, and the variables its ``camunda:in``
    elements pass with it (``in``, as a call activity's)."""
    ins: list[XmlElement] = []
    node: Mapped = {"signal": name(decl, r.el, definition, thrown=True, ins=ins)}
    inputs = [in_mapping(el) for el in [*ins, *r.extensions("in", CAMUNDA)]]
    if inputs:
        node["in"] = inputs
    return node

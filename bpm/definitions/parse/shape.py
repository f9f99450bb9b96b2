"""Checks of shape that carry no behaviour of their own: the metadata keys (properties,
documentation, …) that tools read, the flow counts and conditions BPMN gives a meaning, and
a node's default flow.

Apart from the node fields because they apply alike to every node type (and metadata to the
process and flows too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bpm.definitions.model import GATEWAYS, Flow, NodeType
from bpm.errors import InvalidDefinition


def check_metadata(raw: Mapping[str, Any], where: str, element: str | None) -> None:
    """Keys without behaviour still have a shape, so tools can read them."""
    props = raw.get("properties", {})
    if not isinstance(props, Mapping) or not all(
        isinstance(k, str)
        and (isinstance(v, str) or (isinstance(v, list) and all(isinstance(t, str) for t in v)))
        for k, v in props.items()
    ):
        raise InvalidDefinition(
            f"{where}: 'properties' must be an object of name -> text (or a list of texts, "
            f"for a name given several times)",
            element,
        )
    for key in ("documentation", "versionTag"):
        if key in raw and not isinstance(raw[key], str):
            raise InvalidDefinition(f"{where}: {key!r} must be a string", element)
    if "startableInTasklist" in raw and not isinstance(raw["startableInTasklist"], bool):
        raise InvalidDefinition(f"{where}: 'startableInTasklist' must be true or false", element)
    for key in ("candidate_starter_groups", "candidate_starter_users"):
        names = raw.get(key, [])
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            raise InvalidDefinition(f"{where}: {key!r} must be a list of names", element)
    objects = raw.get("dataObjects", [])
    if not isinstance(objects, list) or not all(
        isinstance(o, Mapping) and all(isinstance(v, str) for v in o.values()) for o in objects
    ):
        raise InvalidDefinition(
            f"{where}: 'dataObjects' must be a list of objects of text values", element
        )


def check_shape(
    node_type: NodeType,
    where: str,
    node_id: str,
    incoming: tuple[str, ...],
    outgoing: tuple[str, ...],
) -> None:
    """Flow counts BPMN gives a meaning. An activity or event with several outgoing flows
    forks (each flow whose condition holds is taken), as a parallel gateway would."""
    if node_type is NodeType.START and incoming:
        raise InvalidDefinition(f"{where}: a start event cannot have incoming flows", node_id)
    if node_type is NodeType.END and outgoing:
        raise InvalidDefinition(f"{where}: an end event cannot have outgoing flows", node_id)
    if node_type in GATEWAYS and not outgoing:
        raise InvalidDefinition(f"{where}: a gateway needs at least one outgoing flow", node_id)


def check_conditions(
    node_type: NodeType,
    where: str,
    node_id: str,
    outgoing: tuple[str, ...],
    flows: Mapping[str, Flow],
) -> None:
    """A parallel gateway takes every flow, so a condition there would mean nothing."""
    if node_type is not NodeType.PARALLEL:
        return
    for flow_id in outgoing:
        if flows[flow_id].condition is not None:
            raise InvalidDefinition(
                f"flow {flow_id!r}: a flow leaving a parallelGateway cannot have a condition "
                f"(every flow is taken); use an exclusive gateway, or conditions on flows "
                f"leaving an activity",
                flow_id,
            )


def default_flow(
    raw: Mapping[str, Any],
    where: str,
    node_id: str,
    outgoing: tuple[str, ...],
    flows: Mapping[str, Flow],
) -> dict[str, Any]:
    default = raw.get("default")
    if default is None:
        return {}
    if default not in outgoing:
        raise InvalidDefinition(
            f"{where}: default flow {default!r} is not one of its outgoing flows "
            f"({', '.join(outgoing)})",
            node_id,
        )
    if flows[default].condition is not None:
        raise InvalidDefinition(
            f"flow {default!r}: the default flow cannot have a condition", default
        )
    return {"default_flow": default}

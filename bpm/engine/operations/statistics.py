"""Runtime statistics as Camunda's ``/process-definition/statistics`` and
``/process-definition/{id}/statistics`` give them, and as the cockpit shows them: per
definition, how many instances run, failed and ended and which incidents are open; per node
of one definition, how many tokens are at work there now and the incidents open there.

A token waiting at a fork for its branches is not at work at the gateway (its branches
are counted where they are); a subprocess whose inner tokens run is, as Camunda counts the
activity instance of the subprocess.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from bpm.definitions.model import SCOPES
from bpm.engine.core.engine_core import EngineCore
from bpm.errors import UnknownProcess
from bpm.states import TokenState, WaitKind
from bpm.store import definitions, statistics
from bpm.store.rows import DefinitionRow
from bpm.store.statistics import IncidentCount, LiveCounts


@dataclass(frozen=True)
class DefinitionStatistics:
    definition: DefinitionRow
    instances: LiveCounts
    incidents: tuple[IncidentCount, ...]

    @property
    def failed_jobs(self) -> int:
        return statistics.failed_jobs(self.incidents)


@dataclass(frozen=True)
class NodeStatistics:
    node_id: str
    #: Tokens at work at the node now (failed ones included).
    instances: int
    failed: int
    incidents: tuple[IncidentCount, ...]

    @property
    def failed_jobs(self) -> int:
        return statistics.failed_jobs(self.incidents)


def by_definition(core: EngineCore) -> list[DefinitionStatistics]:
    """Every deployed definition, by key and version, with zeros where nothing runs."""
    with core.db.transaction() as conn:
        counts = statistics.live_counts(conn)
        incidents = statistics.open_incidents_by_definition(conn)
        found = definitions.every(conn)
    return [
        DefinitionStatistics(d, counts.get(d.id, LiveCounts()), tuple(incidents.get(d.id, ())))
        for d in found
    ]


def by_node(core: EngineCore, definition_id: UUID) -> list[NodeStatistics]:
    """The nodes with a token at work or an open incident, in node id order."""
    with core.db.transaction() as conn:
        if definitions.by_id(conn, definition_id) is None:
            raise UnknownProcess(f"no process definition with id {definition_id}")
        graph = core.graph(definition_id, conn)
        counts = statistics.node_counts(conn, definition_id)
        incidents = statistics.open_incidents_by_node(conn, definition_id)
    at_work: dict[str, tuple[int, int]] = {}
    for c in counts:
        node = graph.nodes.get(c.node_id)
        forking = c.wait_kind == WaitKind.CHILDREN and (node is None or node.type not in SCOPES)
        if forking:
            continue
        instances, failed = at_work.get(c.node_id, (0, 0))
        failing = c.count if c.state == TokenState.FAILED else 0
        at_work[c.node_id] = (instances + c.count, failed + failing)
    nodes = sorted(set(at_work) | set(incidents))
    out = []
    for n in nodes:
        instances, failed = at_work.get(n, (0, 0))
        out.append(NodeStatistics(n, instances, failed, tuple(incidents.get(n, ()))))
    return out

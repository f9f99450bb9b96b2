"""The facade's diagrams of whole definitions (an instance's own diagram is
``EngineReads.diagram``)."""

from __future__ import annotations

from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.ids import as_id
from bpm.engine.operations import definition_diagrams


class EngineDiagrams:
    """``Engine`` inherits these."""

    core: EngineCore

    def definition_diagram(self, definition_id: UUID | str, *, fmt: str = "svg") -> str:
        """The definition's heatmap: per node and flow how often its instances took it, and
        how many of their tokens are at each node now; ``"svg"`` (the modeler's layout when
        the deployed BPMN has one) or ``"mermaid"``."""
        return definition_diagrams.definition_diagram(
            self.core, as_id(definition_id, "definition"), fmt
        )

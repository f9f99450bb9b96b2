"""The facade's reads of whole definitions: their diagrams (an instance's own diagram is
``EngineReads.diagram``), their start forms and the form files their nodes name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.engine.core.ids import as_id
from bpm.engine.operations import definition_diagrams, deployed_forms
from bpm.engine.operations.deployed_forms import DeployedForm, StartForm


class EngineDiagrams:
    """``Engine`` inherits these."""

    core: EngineCore

    def definition_diagram(
        self,
        definition_id: UUID | str,
        *,
        fmt: str = "svg",
        recent: int | None = definition_diagrams.RECENT,
    ) -> str:
        """The definition's heatmap: per node and flow how often its newest ``recent``
        instances (None: all) took it, and how many of their tokens are at each node now;
        ``"svg"`` (the modeler's layout when the deployed BPMN has one) or ``"mermaid"``."""
        return definition_diagrams.definition_diagram(
            self.core, as_id(definition_id, "definition"), fmt, recent
        )

    def start_form(self, definition_id: UUID | str) -> StartForm:
        """The definition's start form and the defaults its fields show."""
        return deployed_forms.start_form(self.core, as_id(definition_id, "process definition"))

    def deployed_form(
        self, form: Mapping[str, Any] | None, definition_id: UUID | str
    ) -> DeployedForm:
        """The deployed file a task's or start event's ``form`` names (Camunda's
        ``deployed-form``): by its key in the definition's deployment, or a Camunda Form by
        its reference; ``InvalidRequest`` for a form that names no deployed file."""
        did = as_id(definition_id, "process definition")
        return deployed_forms.of_form(self.core, form, did)

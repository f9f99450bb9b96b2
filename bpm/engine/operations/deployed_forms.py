"""The form file a user task or a start event names, as deployed: Camunda's ``deployed-form``.

A form key ``deployment:NAME``, ``embedded:deployment:NAME`` or
``camunda-forms:deployment:NAME`` names a file of the definition's own deployment. A form
reference (``camunda:formRef``) names a Camunda Form by the ``id`` in its JSON, bound as
Camunda binds it: ``deployment`` (the definition's deployment), ``latest`` (the newest
deployment holding that id), ``version`` (the Nth deployment of that id, counting from 1, as
Camunda numbers a form's versions). Any other key (``embedded:app:``, a URL) names no
deployed file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from bpm.definitions.form_values import shown_defaults
from bpm.engine.core.engine_core import EngineCore
from bpm.engine.operations.task_views import FormValue
from bpm.errors import InvalidRequest, NotFound, UnknownProcess
from bpm.store import Connection, definitions, deployed_forms
from bpm.store.deployed_forms import FormFile

DEPLOYMENT_KEYS = ("camunda-forms:deployment:", "embedded:deployment:", "deployment:")


@dataclass(frozen=True)
class DeployedForm:
    name: str
    content: bytes
    deployment_id: UUID

    @property
    def media_type(self) -> str:
        if self.name.lower().endswith((".form", ".json")):
            return "application/json"
        return "text/html" if self.name.lower().endswith((".html", ".htm")) else "text/plain"


def of_form(core: EngineCore, form: Mapping[str, Any] | None, definition_id: UUID) -> DeployedForm:
    """The file ``form`` (a task's or start event's form: ``key``, ``ref``) names."""
    key = form.get("key") if form else None
    ref = form.get("ref") if form else None
    with core.db.transaction() as conn:
        row = definitions.by_id(conn, definition_id)
        if row is None or row.deployment_id is None:
            raise UnknownProcess(f"no deployed process definition has id {definition_id}")
        if isinstance(key, str) and key.startswith(DEPLOYMENT_KEYS):
            name = next(key.removeprefix(p) for p in DEPLOYMENT_KEYS if key.startswith(p))
            found = deployed_forms.by_name(conn, row.deployment_id, name)
            if found is None:
                raise NotFound(f"form {name!r} was not deployed with the process")
            return _form(found)
        if isinstance(ref, Mapping):
            return _form(_by_ref(conn, ref, row.deployment_id))
    raise InvalidRequest(
        "the form is not a deployed form: its key names no file of a deployment"
        f" ({', '.join(DEPLOYMENT_KEYS)}) and it has no camunda:formRef"
    )


def _form(found: FormFile) -> DeployedForm:
    return DeployedForm(found.name, found.content, found.deployment_id)


def _by_ref(conn: Connection, ref: Mapping[str, Any], deployment_id: UUID) -> FormFile:
    """Reads only what the binding needs: the definition's deployment (``deployment``), the
    newest deployments until one holds the id (``latest``), or them all in order
    (``version``, which counts a form's deployments)."""
    wanted, binding = str(ref.get("id")), ref.get("binding") or "latest"
    found: FormFile | None = None
    if binding == "deployment":
        files = deployed_forms.camunda_forms(conn, deployment_id=deployment_id)
        found = next((f for f in files if _form_id(f.content) == wanted), None)
    elif binding == "version":
        mine = [f for f in deployed_forms.camunda_forms(conn) if _form_id(f.content) == wanted]
        versions = {str(n): f for n, f in enumerate(_per_deployment(mine), start=1)}
        found = versions.get(str(ref.get("version")))
    else:
        files = deployed_forms.camunda_forms(conn, newest_first=True)
        found = next((f for f in files if _form_id(f.content) == wanted), None)
    if found is None:
        raise NotFound(f"no deployed Camunda Form has the id {wanted!r} ({binding} binding)")
    return found


def _per_deployment(files: list[FormFile]) -> list[FormFile]:
    """One file per deployment (its last by name), oldest first: a form's versions."""
    out: dict[UUID, FormFile] = {}
    for f in files:
        out[f.deployment_id] = f
    return list(out.values())


def _form_id(content: bytes) -> str | None:
    try:
        doc = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return None
    found = doc.get("id") if isinstance(doc, dict) else None
    return found if isinstance(found, str) else None


@dataclass(frozen=True)
class StartForm:
    """A definition's start form: as written (``key``, ``ref``, ``fields``; None without a
    form) and the values its fields show before anything is submitted (their defaults)."""

    form: Mapping[str, Any] | None
    values: tuple[FormValue, ...]


def start_form(core: EngineCore, definition_id: UUID) -> StartForm:
    with core.db.transaction() as conn:
        if definitions.by_id(conn, definition_id) is None:
            raise UnknownProcess(f"no deployed process definition has id {definition_id}")
        graph = core.graph(definition_id, conn)
    spec = graph.start_of(None).form
    if spec is None:
        return StartForm(None, ())
    shown = shown_defaults(spec, {})
    values = tuple(FormValue(f.id, shown.get(f.id), f.type) for f in spec.fields)
    return StartForm(spec.document, values)

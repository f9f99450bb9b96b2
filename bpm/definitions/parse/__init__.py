"""Validate a definition document and compile it to a ``ProcessGraph``.

A package so each concern of the parser has a module of its own: ``document`` (the entry
points), ``graph`` (the checks across nodes), ``nodes`` and ``service_task`` (each node type's
fields), ``policies`` (retry, compensation, saga), ``listeners``, ``decisions``, ``shape``
(metadata and flow counts), ``keys`` (the keys each element may have) and ``patterns`` (the
shared vocabulary). This re-exports the names callers import from ``bpm.definitions.parse``.
"""

from bpm.definitions.parse.decisions import parse_decision_ref
from bpm.definitions.parse.document import MAX_HISTORY_TTL, compile_definition, load_document
from bpm.definitions.parse.keys import PROCESS_METADATA
from bpm.definitions.parse.listeners import parse_listeners
from bpm.definitions.parse.patterns import NAME_PATTERN, TOPIC_PATTERN
from bpm.definitions.parse.policies import SAGA_SCOPES
from bpm.definitions.parse.shape import check_metadata

__all__ = [
    "MAX_HISTORY_TTL",
    "NAME_PATTERN",
    "PROCESS_METADATA",
    "SAGA_SCOPES",
    "TOPIC_PATTERN",
    "check_metadata",
    "compile_definition",
    "load_document",
    "parse_decision_ref",
    "parse_listeners",
]

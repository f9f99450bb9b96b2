"""Process definitions: the JSON document, its validation, the compiled graph and a builder."""

from bpm.definitions.builder import ProcessBuilder
from bpm.definitions.model import Flow, Node, NodeType, ProcessGraph, RetryPolicy
from bpm.definitions.parse.document import compile_definition, load_document

__all__ = [
    "Flow",
    "Node",
    "NodeType",
    "ProcessBuilder",
    "ProcessGraph",
    "RetryPolicy",
    "compile_definition",
    "load_document",
]

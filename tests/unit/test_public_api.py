"""``bpm.api`` is the engine's public face: every bpm type a facade method takes or returns,
and every bpm type those values hold, is exported there, so the server, the SDK and users
never reach into the modules behind it."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from enum import Enum
from typing import Any

import bpm.api
from bpm.api import Engine


def _bpm_types(hint: Any, seen: set[type]) -> None:
    for arg in typing.get_args(hint):
        _bpm_types(arg, seen)
    if not isinstance(hint, type) or not hint.__module__.startswith("bpm") or hint in seen:
        return
    seen.add(hint)
    if dataclasses.is_dataclass(hint):
        for value in typing.get_type_hints(hint).values():
            _bpm_types(value, seen)


def _facade_types() -> set[type]:
    seen: set[type] = set()
    for name, method in inspect.getmembers(Engine, predicate=inspect.isfunction):
        if name.startswith("_"):
            continue
        for hint in typing.get_type_hints(method).values():
            _bpm_types(hint, seen)
    return seen


def test_every_value_of_the_facade_is_exported() -> None:
    exported = {id(getattr(bpm.api, name)) for name in bpm.api.__all__}
    missing = sorted(
        f"{t.__module__}.{t.__name__}"
        for t in _facade_types()
        if id(t) not in exported and not issubclass(t, Engine)
    )
    assert not missing, f"bpm.api does not export {missing}"


def test_the_walk_finds_nested_values() -> None:
    found = _facade_types()
    names = {t.__name__ for t in found}
    # A deployment view holds resource rows; a start returns a Started.
    assert {"DeploymentView", "ResourceRow", "Started", "Page"} <= names
    assert any(issubclass(t, Enum) for t in found)


def test_every_export_exists() -> None:
    for name in bpm.api.__all__:
        assert hasattr(bpm.api, name), name

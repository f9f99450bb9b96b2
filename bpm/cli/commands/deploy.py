"""``bpm deploy FILE``: validate a definition and store it as a new version (or the same one)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from bpm.cli import render
from bpm.cli.runtime import embedded, import_handlers
from bpm.definitions import compile_definition, load_document
from bpm.definitions.bpmn import import_bpmn
from bpm.dmn import parse_dmn
from bpm.errors import ConfigError, InvalidDefinition
from bpm.handlers import registry


@click.command()
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print {id, key, version, created}.")
@click.option(
    "--check",
    is_flag=True,
    help="Only check FILE: print every problem (or the processes it holds); deploy nothing.",
)
def deploy(file: Path, as_json: bool, check: bool) -> None:
    """Deploy the process definition in FILE (.json), every process of a BPMN 2.0 file
    (.bpmn or .xml; see docs/bpmn.md), or every decision of a DMN file (.dmn; docs/dmn.md).

    Deploying a document equal to the latest version of its key changes nothing and prints
    that version again. A refused file changes nothing; every problem is printed, one per
    line, as ``error: FILE: line N: ...``.
    """
    if not file.exists():
        raise ConfigError(f"{file}: no such file")
    if file.suffix.lower() in {".bpmn", ".xml"}:
        _deploy_bpmn(file, as_json, check)
        return
    if file.suffix.lower() == ".dmn":
        _deploy_dmn(file, as_json, check)
        return
    document = load_document(file)
    compile_definition(document)  # refuse a bad document before touching the database
    if check:
        _checked(file, [document], as_json)
        return
    with embedded() as rt:
        result = rt.engine.deploy(
            document, source=file.read_text(encoding="utf-8"), source_format="json"
        )
    if as_json:
        render.emit_json(
            {
                "id": str(result.id),
                "key": result.key,
                "version": result.version,
                "created": result.created,
            }
        )
    elif result.created:
        render.line(f"deployed {result.key} version {result.version} (id {result.id})")
    else:
        render.line(
            f"{result.key} version {result.version} is already deployed with this "
            f"content (id {result.id}); nothing changed"
        )


def _checked(
    file: Path, documents: list[dict[str, Any]], as_json: bool, ignored: Sequence[str] = ()
) -> None:
    """The processes FILE holds and what their import ignored (another vendor's
    extensions...), one ``ignored: line N: ...`` each; nothing is deployed."""
    keys = [str(doc["key"]) for doc in documents]
    if as_json:
        render.emit_json(
            {"file": str(file), "ok": True, "processes": keys, "ignored": list(ignored)}
        )
        return
    for note in ignored:
        render.line(f"ignored: {note}")
    render.line(f"{file}: ok, {len(keys)} process(es): {', '.join(keys)}; nothing deployed")


def _read_checked(file: Path, compile_file: Callable[[bytes], Any]) -> tuple[bytes, Any]:
    """The file's bytes and what they compile to; every problem named with the file."""
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InvalidDefinition(f"{file}: cannot read the file ({exc.strerror})") from exc
    try:
        return data, compile_file(data)  # all checked before touching the database
    except InvalidDefinition as exc:
        lines = "\n".join(f"{file}: {line}" for line in str(exc).splitlines())
        raise InvalidDefinition(lines, exc.element) from None


def _deploy_dmn(file: Path, as_json: bool, check: bool) -> None:
    data, parsed = _read_checked(file, parse_dmn)
    if check:
        _checked(file, [{"key": key} for key in parsed.decisions], as_json)
        return
    with embedded() as rt:
        results = rt.engine.deploy_dmn(data, name=file.name, resource=file.name)
    _print_results("decision", results, as_json)


def _print_results(kind: str, results: Sequence[Any], as_json: bool) -> None:
    if as_json:
        render.emit_json(
            [
                {"id": str(r.id), "key": r.key, "version": r.version, "created": r.created}
                for r in results
            ]
        )
        return
    label = f"{kind} " if kind else ""
    for result in results:
        if result.created:
            render.line(f"deployed {label}{result.key} version {result.version} (id {result.id})")
        else:
            render.line(
                f"{label}{result.key} version {result.version} is already deployed with this "
                f"content (id {result.id}); nothing changed"
            )


def _deploy_bpmn(file: Path, as_json: bool, check: bool) -> None:
    import_handlers()  # a script task runs the handler registered under its name
    known = registry.names()
    xml, imported = _read_checked(file, lambda data: import_bpmn(data, handlers=known))
    if check:
        _checked(file, imported.documents, as_json, imported.ignored)
        return
    with embedded() as rt:  # one deployment of the file, named for it
        results = rt.engine.deploy_bpmn(xml, name=file.name, resource=file.name)
    _print_results("", results, as_json)

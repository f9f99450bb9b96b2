"""``bpm deploy FILE``: validate a definition and store it as a new version (or the same one)."""

from __future__ import annotations

from pathlib import Path

import click

from bpm.cli import render
from bpm.cli.runtime import embedded
from bpm.definitions import compile_definition, load_document
from bpm.errors import ConfigError


@click.command()
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print {id, key, version, created}.")
def deploy(file: Path, as_json: bool) -> None:
    """Deploy the process definition in FILE (.json).

    Deploying a document equal to the latest version of its key changes nothing and prints
    that version again.
    """
    if file.suffix.lower() == ".bpmn":
        raise ConfigError(f"{file}: BPMN XML import is not available yet; write the definition "
                          f"as JSON (see docs: definition format)")
    if not file.exists():
        raise ConfigError(f"{file}: no such file")
    document = load_document(file)
    compile_definition(document)  # refuse a bad document before touching the database
    with embedded() as rt:
        result = rt.engine.deploy(document, source=file.read_text(encoding="utf-8"),
                                  source_format="json")
    if as_json:
        render.emit_json({"id": str(result.id), "key": result.key, "version": result.version,
                          "created": result.created})
    elif result.created:
        render.line(f"deployed {result.key} version {result.version} (id {result.id})")
    else:
        render.line(f"{result.key} version {result.version} is already deployed with this "
                    f"content (id {result.id}); nothing changed")

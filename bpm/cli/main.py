"""The ``bpm`` command group and its entry point."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from bpm import __version__
from bpm.cli.commands import (
    credentials,
    db,
    decide,
    definition,
    deploy,
    external,
    history,
    inspect,
    operate,
    replay,
    serve,
    signal,
    start,
    tasks,
)
from bpm.cli.commands.demo import demo
from bpm.cli.commands.retention import cleanup
from bpm.cli.errors import report
from bpm.cli.runtime import quiet_logging

EPILOG = """\b
Environment:
  BPM_DATABASE_URL  SQLAlchemy URL (default: sqlite:///bpm.db in this folder)
  BPM_IMPORTS       comma-separated modules that register handlers
  BPM_BROKER_URL    Celery broker: jobs go to the workers (unset: they run in bpm itself)
  BPM_DEBUG=1       show the traceback of an unexpected error
  BPM_SERVER_HOST, BPM_SERVER_PORT, BPM_SERVER_WORKERS   defaults of bpm serve
  BPM_SERVER_ALLOWED_ORIGINS, BPM_SERVER_OPENAPI=0       bpm serve (docs/http-api.md)
"""


class BpmGroup(click.Group):
    """A group whose errors, including usage errors, print as one ``error:`` line."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            result = super().main(args, prog_name, complete_var, False, **extra)
        except Exception as exc:
            report(exc)
        except KeyboardInterrupt as exc:
            report(exc)
        if not standalone_mode:
            return result
        sys.exit(result if isinstance(result, int) else 0)


@click.group(cls=BpmGroup, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bpm")
def cli() -> None:
    """bpm: a BPM process engine (state in PostgreSQL or SQLite).

    Without BPM_BROKER_URL, bpm runs in embedded mode: the jobs of an instance run inside the
    bpm command that started or retried it. With it, they go to the Celery workers.
    """
    quiet_logging()


cli.add_command(db.db)
cli.add_command(deploy.deploy)
cli.add_command(definition.definition)
cli.add_command(decide.decide)
cli.add_command(start.start)
for command in (inspect.instances, inspect.show, inspect.trace, inspect.incidents):
    cli.add_command(command)
cli.add_command(operate.retry)
cli.add_command(operate.cancel)
cli.add_command(operate.resolve)
cli.add_command(replay.replay)
cli.add_command(history.history)
cli.add_command(operate.recover)
for command in (tasks.tasks, tasks.claim, tasks.unclaim, tasks.complete, tasks.correlate):
    cli.add_command(command)
cli.add_command(signal.signal)
cli.add_command(external.external_worker)
cli.add_command(demo)
cli.add_command(cleanup)
cli.add_command(serve.serve)
cli.add_command(credentials.credentials)


def main() -> None:
    cli.main(prog_name="bpm")


if __name__ == "__main__":
    main()

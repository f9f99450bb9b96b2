"""Deploy, start and wait for one order from Python, with no broker and no CLI.

    python -m examples.start_from_python            # SQLite file in a temporary folder
    BPM_DATABASE_URL=postgresql://... python -m examples.start_from_python

Embedded mode runs the jobs in this process; on PostgreSQL run ``bpm db upgrade`` first.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import bpm.demo.order_handlers  # noqa: F401  (registers the handlers)
from bpm.definitions import load_document
from bpm.demo import ORDER_FULFILMENT
from bpm.embedded import EmbeddedRuntime


def main() -> None:
    url = os.environ.get("BPM_DATABASE_URL")
    with tempfile.TemporaryDirectory() as tmp:
        rt = EmbeddedRuntime(url or f"sqlite:///{Path(tmp) / 'example.db'}")
        try:
            deployed = rt.engine.deploy(load_document(ORDER_FULFILMENT))
            print(f"deployed {deployed.key} version {deployed.version}")
            started = rt.engine.start(
                "order_fulfilment",
                {"total": 180.0, "items": ["book", "lamp"]},
                business_key="ORDER-PY-1",
            )
            state = rt.wait_for(started.id, timeout=30)
            print(f"instance {started.id} is {state}")
            print(json.dumps(rt.engine.show(started.id)["variables"], indent=2, sort_keys=True))
        finally:
            rt.close()


if __name__ == "__main__":
    main()

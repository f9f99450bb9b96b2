"""Submit an expense claim from another service: send ``bpm.start_instance`` by name.

Only ``celery[redis]`` is needed here, no bpm. It reads the same broker settings as the
workers, sends the start to ``<BPM_QUEUE_PREFIX>bpm.starts``, and, when ``BPM_RESULT_BACKEND``
is set, waits for what the worker did with it::

    python examples/approval_send_start.py EXP-1001 --amount 250 --employee alice

The business key is the claim's number. Sending the same claim again (a retry after a timeout,
a message the sender is not sure arrived) starts nothing new: the worker answers with the
instance the first send started. See docs/tutorial.md and docs/distributed.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from celery import Celery
from celery.exceptions import TimeoutError as NoAnswer


def _amount(text: str) -> int | float:
    """``250`` stays the JSON number 250, ``12.5`` is 12.5."""
    try:
        return int(text)
    except ValueError:
        return float(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Submit an expense claim (bpm.start_instance).")
    parser.add_argument("claim", help="the claim's number, used as the business key")
    parser.add_argument("--amount", type=_amount, required=True, help="the amount claimed")
    parser.add_argument("--employee", required=True, help="who submitted the claim")
    parser.add_argument(
        "--process",
        default="expense_approval",
        help="the process key to start (default: %(default)s)",
    )
    args = parser.parse_args(argv)

    broker = os.environ.get("BPM_BROKER_URL", "redis://127.0.0.1:6379/0")
    backend = os.environ.get("BPM_RESULT_BACKEND")  # unset: fire and forget
    queue = os.environ.get("BPM_QUEUE_PREFIX", "") + "bpm.starts"
    app = Celery("expenses-service", broker=broker, backend=backend)

    result: Any = app.send_task(
        "bpm.start_instance",
        kwargs={
            "process_key": args.process,
            "variables": {"amount": args.amount, "employee": args.employee},
            "business_key": args.claim,
        },
        queue=queue,
    )
    print(f"sent bpm.start_instance for claim {args.claim} to {queue} (Celery task {result.id})")
    if not backend:
        return 0
    try:
        outcome: dict[str, Any] = result.get(timeout=30)
    except NoAnswer:
        result.forget()  # stop listening for it
        print(f"no answer within 30 s: is a worker consuming {queue}?", file=sys.stderr)
        return 1
    except Exception as exc:  # StartRefused: an unknown process key, unusable variables
        print(f"refused: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    if outcome["created"]:
        print(f"started instance {outcome['instance_id']}")
    else:
        print(f"nothing new: claim {args.claim} is instance {outcome['instance_id']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

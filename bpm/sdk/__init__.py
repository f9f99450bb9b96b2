"""A Python worker for external tasks: subscribe functions to topics and run them.

from datetime import timedelta
import bpm
from bpm.sdk import ExternalTask, Worker

worker = Worker("payments-1")

@worker.subscribe("payments", lock_duration=timedelta(minutes=1), variables=["total"])
def charge(task: ExternalTask) -> dict[str, object]:
    if task.variables["total"] > 10_000:
        raise bpm.BpmnError("LIMIT", "over the card limit")
    return {"charged": True}

worker.run()   # until SIGTERM / Ctrl-C, or worker.stop()
"""

from bpm.engine.operations.external import LockedTask as ExternalTask
from bpm.sdk.worker import Subscription, Worker

__all__ = ["ExternalTask", "Subscription", "Worker"]

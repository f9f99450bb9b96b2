"""Starts sent the way another service sends them: ``bpm.start_instance`` by name through a
plain Celery app (no bpm code), with a business key and no idempotency key.

They go out at an even pace on a thread of their own, so they keep coming while the test
injects faults. The sender behaves like a caller that must not lose an order:

- a send that raises (Redis is down) is sent again after a pause;
- after the broker went away, every start it sent that has no instance yet is sent again
  (``resend_unconfirmed``, asking the engine by business key as a caller asks the API): a
  start may be lost however early it was sent, since a worker that had just popped it from
  its queue, and had not yet recorded it as unacknowledged, loses it when Redis stops.

Every send is a new Celery message with its own task id, as ``send_task`` makes one per
call, and the same business key: nothing but the business key can tell a resend from a new
order. What was sent when, with which task ids, is kept for the report.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import defaultdict
from collections.abc import Sequence, Set
from uuid import uuid4

from celery import Celery

from tests.chaos.process import KEY, Order

#: A start that cannot be sent for this long is given up (the broker stays down).
GIVE_UP = 120.0


class Sender:
    def __init__(
        self, broker_url: str, prefix: str, orders: Sequence[Order], spread: float
    ) -> None:
        self.orders = list(orders)
        self.spread = spread
        self.queue = f"{prefix}bpm.starts"
        self.app = Celery(broker=broker_url, set_as_current=False)
        #: Sends that raised, and starts sent again after a broker outage, by business key.
        self.errors: dict[str, int] = defaultdict(int)
        self.resent: dict[str, int] = defaultdict(int)
        #: Celery task ids of every send of a business key (made here, as send_task would),
        #: to follow a lost start through the workers' logs.
        self.task_ids: dict[str, list[str]] = defaultdict(list)
        self.failed_ids: set[str] = set()
        self.last_errors: list[str] = []
        self.unsent: list[str] = []
        self.started_at = 0.0
        self.finished_at = 0.0
        self._sent: list[tuple[float, Order]] = []
        self._again: queue.Queue[Order] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="chaos-sender", daemon=True)
        self._stop = threading.Event()  # give up at once
        self._closing = threading.Event()  # send what is left, then end

    def start(self) -> float:
        self.started_at = time.time()
        self._thread.start()
        return self.started_at

    def resend_unconfirmed(self, confirmed: Set[str]) -> int:
        """Send again every start sent so far whose business key is not in ``confirmed``
        (those with an instance); returns how many (called when the broker is back after an
        outage). One still queued becomes a duplicate the engine answers with the existing
        instance."""
        sent = {order.business_key: order for _at, order in list(self._sent)}
        again = [order for key, order in sent.items() if key not in confirmed]
        for order in again:
            self._again.put(order)
        return len(again)

    def close(self, timeout: float) -> None:
        """Finish the list and the resends, then end."""
        self._closing.set()
        self._thread.join(timeout)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.app.close()

    def _run(self) -> None:
        gap = self.spread / max(1, len(self.orders))
        try:
            for n, order in enumerate(self.orders):
                due = self.started_at + n * gap
                while (left := due - time.time()) > 0:
                    self._send_again()
                    if self._stop.wait(min(0.1, left)):
                        return
                self._send(order)
            while not self._closing.wait(0.1) and not self._stop.is_set():
                self._send_again()
            self._send_again()
        finally:
            self.finished_at = time.time()

    def _send_again(self) -> None:
        while not self._stop.is_set():
            try:
                order = self._again.get_nowait()
            except queue.Empty:
                return
            self.resent[order.business_key] += 1
            self._send(order)

    def _send(self, order: Order) -> None:
        give_up = time.monotonic() + GIVE_UP
        while not self._stop.is_set():
            task_id = str(uuid4())
            self.task_ids[order.business_key].append(task_id)
            try:
                self.app.send_task(
                    "bpm.start_instance",
                    task_id=task_id,
                    queue=self.queue,
                    kwargs={
                        "process_key": KEY,
                        "variables": order.variables(),
                        "business_key": order.business_key,
                    },
                )
                self._sent.append((time.time(), order))
                return
            except Exception as exc:  # the broker is down: a caller tries again
                self.errors[order.business_key] += 1
                self.failed_ids.add(task_id)
                self.last_errors = [
                    *self.last_errors[-2:],
                    f"{order.business_key}: {type(exc).__name__}: {exc}",
                ]
                if time.monotonic() > give_up:
                    self.unsent.append(order.business_key)
                    return
                self._stop.wait(0.5)

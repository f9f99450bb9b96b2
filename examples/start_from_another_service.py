"""Start a bpm instance from any service that has only ``celery`` installed.

No bpm code is imported: the task is sent by name to the ``bpm.starts`` queue. A redelivery of
this message (same task id) starts nothing new; the business key deduplicates repeated sends.

    BPM_BROKER_URL=redis://127.0.0.1:6379/0 python examples/start_from_another_service.py
"""

from __future__ import annotations

import os

from celery import Celery

broker = os.environ.get("BPM_BROKER_URL", "redis://127.0.0.1:6379/0")
prefix = os.environ.get("BPM_QUEUE_PREFIX", "")
app = Celery("orders-service", broker=broker)

result = app.send_task(
    "bpm.start_instance",
    kwargs={
        "process_key": "order_fulfilment",
        "variables": {"total": 180, "items": ["lamp"]},
        "business_key": "order-4711",
    },
    queue=f"{prefix}bpm.starts",
)
print(f"sent bpm.start_instance as Celery task {result.id}")

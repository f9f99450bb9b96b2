"""What another service that sends jobs by name hears back, with a result backend set."""

from __future__ import annotations

import pytest
from celery import Celery

from tests.workers.cluster import REDIS_URL, Cluster
from tests.workers.test_outages import two_steps
from tests.workers.test_runtime import deploy


def test_with_a_result_backend_a_sender_gets_the_instance_or_the_refusal(
        cluster: Cluster) -> None:
    deploy(cluster, two_steps())
    cluster.env["BPM_RESULT_BACKEND"] = REDIS_URL
    cluster.worker("w1")
    cluster.wait_ready()
    sender = Celery(broker=REDIS_URL, backend=REDIS_URL, set_as_current=False)
    starts = f"{cluster.prefix}bpm.starts"

    ok = sender.send_task("bpm.start_instance", queue=starts,
                          kwargs={"process_key": "two_steps", "business_key": "r-1"})
    result = ok.get(timeout=30)
    assert result["outcome"].startswith("started") and result["created"] is True
    assert result["instance_id"] == str(cluster.instance_id("r-1"))

    again = sender.send_task("bpm.start_instance", queue=starts,
                             kwargs={"process_key": "two_steps", "business_key": "r-1"})
    assert again.get(timeout=30)["created"] is False  # the same business key: no new one

    typo = sender.send_task("bpm.start_instance", queue=starts,
                            kwargs={"process_key": "two_stpes", "business_key": "r-2"})
    with pytest.raises(Exception, match="no process definition 'two_stpes'") as refused:
        typo.get(timeout=30)
    assert type(refused.value).__name__ == "StartRefused"

    lost = sender.send_task("bpm.correlate_message", queue=starts,
                            kwargs={"message": "nobody-waits", "business_key": "r-1"})
    with pytest.raises(Exception) as no_match:
        lost.get(timeout=30)
    assert type(no_match.value).__name__ == "CorrelationRefused"
    assert cluster.instance_count() == 1

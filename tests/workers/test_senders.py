"""What another service that sends jobs by name hears back, with a result backend set."""

from __future__ import annotations

import pytest
from celery import Celery

from tests.workers.cluster import REDIS_URL, Cluster
from tests.workers.test_outages import two_steps
from tests.workers.test_runtime import deploy


def test_with_a_result_backend_a_sender_gets_the_instance_or_the_refusal(cluster: Cluster) -> None:
    deploy(cluster, two_steps())
    cluster.env["BPM_RESULT_BACKEND"] = REDIS_URL
    cluster.worker("w1")
    cluster.wait_ready()
    sender = Celery(broker=REDIS_URL, backend=REDIS_URL, set_as_current=False)
    starts = f"{cluster.prefix}bpm.starts"

    ok = sender.send_task(
        "bpm.start_instance",
        queue=starts,
        kwargs={"process_key": "two_steps", "business_key": "r-1"},
    )
    result = ok.get(timeout=30)
    assert result["outcome"].startswith("started") and result["created"] is True
    assert result["instance_id"] == str(cluster.instance_id("r-1"))

    again = sender.send_task(
        "bpm.start_instance",
        queue=starts,
        kwargs={"process_key": "two_steps", "business_key": "r-1"},
    )
    assert again.get(timeout=30)["created"] is False  # the same business key: no new one

    typo = sender.send_task(
        "bpm.start_instance",
        queue=starts,
        kwargs={"process_key": "two_stpes", "business_key": "r-2"},
    )
    with pytest.raises(Exception, match="no process definition 'two_stpes'") as refused:
        typo.get(timeout=30)
    assert type(refused.value).__name__ == "StartRefused"

    lost = sender.send_task(
        "bpm.correlate_message",
        queue=starts,
        kwargs={"message": "nobody-waits", "business_key": "r-1"},
    )
    with pytest.raises(Exception) as no_match:
        lost.get(timeout=30)
    assert type(no_match.value).__name__ == "CorrelationRefused"
    assert cluster.instance_count() == 1


def test_a_job_due_later_than_half_the_visibility_timeout_is_left_to_the_scans() -> None:
    """Redis would hand such an ETA message out again every visibility timeout while a
    worker holds it; the scans send the job when its row is due instead."""
    from datetime import UTC, datetime, timedelta
    from uuid import uuid4

    import redis

    from bpm.dispatch import RUN_HANDLER, Job
    from bpm_workers.config import HANDLERS, Settings, celery_config
    from bpm_workers.dispatcher import CeleryDispatcher

    settings = Settings(
        broker_url=REDIS_URL,
        queue_prefix=f"t{uuid4().hex[:8]}.",
        visibility_timeout=60,
        scan_interval=1,
        stall_grace=2,
    )
    app = Celery("eta-test", set_as_current=False)
    app.conf.update(celery_config(settings))
    now = datetime.now(UTC)
    CeleryDispatcher(app, settings).dispatch(
        [
            Job(RUN_HANDLER, {"task_id": str(uuid4())}, now + timedelta(seconds=10)),
            Job(RUN_HANDLER, {"task_id": str(uuid4())}, now + timedelta(seconds=31)),
            Job(RUN_HANDLER, {"task_id": str(uuid4())}, now + timedelta(hours=3)),
        ]
    )
    queue = settings.queue(HANDLERS)
    client = redis.Redis.from_url(REDIS_URL)
    try:
        assert client.llen(queue) == 1
    finally:
        client.delete(queue)


def test_the_cli_in_distributed_mode_imports_handler_modules_from_the_working_directory(
    cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``BPM_IMPORTS=approval_handlers`` next to the model works with a broker set too, as
    it does in embedded mode (loading the Celery runtime imported them without it)."""
    import subprocess

    from tests.cli.conftest import bpm_executable

    here = tmp_path_factory.mktemp("project")
    (here / "approval_handlers.py").write_text(
        "import bpm\n\n\n@bpm.handler('noop')\ndef noop(ctx: bpm.HandlerContext) -> None:\n"
        "    return None\n"
    )
    deploy(cluster, two_steps())
    env = {**cluster.env, "BPM_IMPORTS": "approval_handlers"}
    env.pop("PYTHONPATH", None)  # as a user's shell has it: only the working directory
    started = subprocess.run(
        [*bpm_executable(), "start", "two_steps", "--business-key", "cwd-1"],
        env=env,
        cwd=here,
        capture_output=True,
        text=True,
    )
    assert started.returncode == 0, started.stderr
    assert cluster.instance_count() == 1


def test_a_message_sent_by_name_starts_its_instance_once_per_message(cluster: Cluster) -> None:
    """``bpm.correlate_message`` with no instance starts one at the message start event;
    the same message delivered twice (one task id) starts it once, a new message again."""
    from uuid import uuid4

    from bpm.definitions import ProcessBuilder
    from bpm.store import instances

    doc = (
        ProcessBuilder("by_message")
        .start("by_mail")
        .service_task("a", handler="noop")
        .end()
        .sequence("by_mail", "a", "end")
        .build()
    )
    doc["nodes"][0]["message"] = "Order mailed"
    deploy(cluster, doc)
    cluster.env["BPM_RESULT_BACKEND"] = REDIS_URL
    cluster.worker("w1")
    cluster.wait_ready()
    sender = Celery(broker=REDIS_URL, backend=REDIS_URL, set_as_current=False)
    starts = f"{cluster.prefix}bpm.starts"
    once = str(uuid4())
    for _ in range(2):  # a redelivery: the same message id
        sent = sender.send_task(
            "bpm.correlate_message",
            queue=starts,
            task_id=once,
            kwargs={"message": "Order mailed", "variables": {"n": 1}},
        )
        sent.get(timeout=30)
    sender.send_task("bpm.correlate_message", queue=starts, kwargs={"message": "Order mailed"}).get(
        timeout=30
    )

    def ended() -> bool:
        with cluster.db.transaction() as conn:
            found = instances.search(conn, keys=["by_message"], limit=10)
        return len(found) == 2 and all(i.state == "COMPLETED" for i in found)

    cluster.wait_until(ended, 60, "two instances started by message to complete")

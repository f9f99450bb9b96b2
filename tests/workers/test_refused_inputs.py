"""A request that exists only in its message and carries arguments that can never be stored
is refused once, with its reason, and acknowledged: never put back in its queue, where it
would come round again forever and hold up every start behind it."""

from __future__ import annotations

import secrets

import pytest
from celery import Celery

from bpm.errors import InputRefused
from bpm.store import Database, DatabaseRefused
from tests.workers.cluster import REDIS_URL, Cluster
from tests.workers.test_outages import two_steps
from tests.workers.test_runtime import deploy


def _log(cluster: Cluster) -> str:
    return (cluster.logs / "w1.log").read_text(errors="replace")


def test_a_start_the_database_cannot_store_is_refused_once_and_the_next_start_goes_on(
    cluster: Cluster,
) -> None:
    deploy(cluster, two_steps())
    cluster.env["BPM_RESULT_BACKEND"] = REDIS_URL
    cluster.worker("w1")
    cluster.wait_ready()
    sender = Celery(broker=REDIS_URL, backend=REDIS_URL, set_as_current=False)
    starts = f"{cluster.prefix}bpm.starts"

    # Random text does not compress: 12 KB of it is past any index row PostgreSQL takes.
    too_long = secrets.token_hex(6000)
    long_key = sender.send_task(
        "bpm.start_instance",
        queue=starts,
        kwargs={"process_key": "two_steps", "business_key": too_long},
    )
    # A NUL passes no check of the engine's: PostgreSQL's driver refuses it.
    nul_key = sender.send_task(
        "bpm.start_instance", queue=starts, kwargs={"process_key": "two\x00steps"}
    )
    after = sender.send_task(
        "bpm.start_instance",
        queue=starts,
        kwargs={"process_key": "two_steps", "business_key": "after-the-refusals"},
    )
    with pytest.raises(Exception, match="business key may be at most 255") as refused:
        long_key.get(timeout=30)
    assert type(refused.value).__name__ == "StartRefused"
    with pytest.raises(Exception, match="the database refused a value") as refused:
        nul_key.get(timeout=30)
    assert type(refused.value).__name__ == "StartRefused"
    # Behind them in the one worker's queue, without waiting out any pause.
    assert after.get(timeout=10)["created"] is True
    cluster.wait_all(1, 30)
    assert cluster.instance_count() == 1

    log = _log(cluster)
    assert "outcome=requeued" not in log, cluster.tail()
    lines = [line for line in log.splitlines() if "job=bpm.start_instance outcome=refused" in line]
    assert len(lines) == 2, cluster.tail()
    assert too_long not in log  # the log line shows only the start of the key


def test_values_postgresql_refuses_are_a_refusal_of_the_input(pg_url: str) -> None:
    db = Database(pg_url)
    try:
        for statement in ("SELECT 'x'::int", "SELECT 1 / 0", "SELECT 10::numeric(1, 0)"):
            with pytest.raises(DatabaseRefused) as refused:
                with db.transaction() as conn:
                    conn.exec_driver_sql(statement)
            assert isinstance(refused.value, InputRefused)
            assert "the database refused a value" in str(refused.value)
    finally:
        db.dispose()

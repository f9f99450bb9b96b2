"""Deleting a deployment: its files and definitions go, and only while no instance, running
or ended, was started from one of them (their history names the definition)."""

from __future__ import annotations

from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.engine.operations import start_timers
from bpm.errors import InvalidOperation, NotFound
from bpm.states import EngineEvent
from bpm.store import definitions, deployments
from bpm.store import start_timers as start_timer_rows

OPERATOR = "operator"


def delete(core: EngineCore, deployment_id: UUID) -> None:
    """One transaction. The definitions are locked first, so a start racing the delete
    either inserts its instance first (the delete then waits for it and is refused) or its
    insert waits for the delete and is refused as ``UnknownProcess``, starting nothing."""
    with core.transaction(OPERATOR) as tx:
        if deployments.get(tx.conn, deployment_id) is None:
            raise NotFound(f"deployment with id '{deployment_id}' does not exist")
        definition_ids = deployments.lock_definitions(tx.conn, deployment_id)
        count = deployments.instances_of(tx.conn, definition_ids)
        if count:
            raise InvalidOperation(
                f"deployment {deployment_id} is not deleted: {count} process instance(s) were"
                " started from its definitions (bpm keeps a definition while any instance or"
                " its history names it; retention removes ended instances)"
            )
        keys = definitions.keys_of(tx.conn, definition_ids)
        start_timer_rows.disarm(tx.conn, definition_ids)
        deployments.delete(tx.conn, deployment_id)
        start_timers.arm_latest(tx, core, keys)
        tx.history.engine(
            instance_id=None,
            at=tx.now,
            type=EngineEvent.DEPLOYMENT_DELETED,
            actor=tx.actor,
            data={"id": str(deployment_id), "definitions": [str(i) for i in definition_ids]},
        )

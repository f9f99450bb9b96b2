"""Creating an instance: its row, its root token at the start event, its first variables and
its ``INSTANCE_STARTED`` history row, in the caller's transaction.

Every way an instance begins goes through ``create`` (an operator's or a client's start, a
worker's start job, and an activity that starts an instance of another process), so an
instance is made one way whatever made it.
"""

from __future__ import annotations

from typing import Any

from bpm.definitions.model import ProcessGraph
from bpm.engine.core.tx import Tx
from bpm.engine.semantics.moves import create as create_tokens
from bpm.engine.semantics.moves import new_token
from bpm.states import EngineEvent, InstanceState
from bpm.store import instances
from bpm.store.ids import new_named_id
from bpm.store.rows import DefinitionRef, DefinitionRow, InstanceRow, TokenRow


def create(
    tx: Tx,
    definition: DefinitionRef | DefinitionRow,
    graph: ProcessGraph,
    variables: dict[str, Any],
    *,
    business_key: str | None,
    start_key: str | None,
    caller: TokenRow | None = None,
    start_event: str | None = None,
    message: str | None = None,
    with_batch: bool = False,
) -> tuple[InstanceRow, TokenRow] | None:
    """The new instance and its root token (ACTIVE at the start event, not yet advanced);
    None when a concurrent start took ``start_key`` first (nothing was written).
    ``start_event``: another start event than the process's none start (a message start
    event, for a correlated ``message``).

    ``caller``: the token of the call activity that starts it; the new instance is linked to
    it, to its instance, and to the top of the chain of calls.

    ``with_batch`` (PostgreSQL, a start with no caller): the row is written with the
    transaction's write batch, saving its statement; a key taken meanwhile then raises
    ``StartTaken`` from the flush (or from a statement sent before it) instead of None
    here, so the caller must handle that."""
    root_id = None
    if caller is not None:
        above = instances.get(tx.conn, caller.instance_id)
        root_id = (above.root_instance_id if above else None) or caller.instance_id
    inst = InstanceRow(
        new_named_id(),
        definition.id,
        definition.key,
        business_key,
        start_key,
        InstanceState.RUNNING,
        0,
        tx.now,
        tx.now,
        None,
        caller.instance_id if caller else None,
        caller.id if caller else None,
        root_id,
    )
    if with_batch and caller is None and tx.conn.dialect.name == "postgresql":
        tx.insert_instance(inst)
    elif not instances.insert(tx.conn, inst):
        return None
    # A row this transaction inserted is its own until commit: nobody else can see it, let
    # alone lock it, so it counts as locked (no statement to lock it again).
    tx.note_locked(inst.id)
    tx.know_graph(inst.id, graph)  # saves asking for it again (its local variables, its conditions)
    root = new_token(
        tx,
        instance_id=inst.id,
        node_id=start_event or graph.start_of(None).id,
        parent=None,
        scope_id=None,
        concurrent=False,
        via_flow=None,
    )
    tx.history.engine(
        instance_id=inst.id,
        at=tx.now,
        type=EngineEvent.INSTANCE_STARTED,
        to_state=InstanceState.RUNNING,
        actor=tx.actor,
        data={
            "key": definition.key,
            "version": definition.version,
            "business_key": business_key,
            "variables": variables,
            **({"message": message} if message is not None else {}),
            **(
                {"called_by": {"instance": str(caller.instance_id), "token": str(caller.id)}}
                if caller
                else {}
            ),
        },
    )
    tx.write_variables(inst.id, variables)
    create_tokens(tx, [root], [])
    return inst, root

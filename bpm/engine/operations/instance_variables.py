"""Setting and removing a live instance's variables from outside (an operator, the API's
``POST /process-instance/{id}/variables``): one transaction, under the instance's row lock,
with a history row for each part so history alone still rebuilds the variables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from uuid import UUID

from bpm.engine.core.engine_core import EngineCore
from bpm.errors import InvalidOperation, NotFound
from bpm.states import LIVE_INSTANCE, EngineEvent
from bpm.store import variables
from bpm.variables import check_variables

OPERATOR = "operator"


def modify(
    core: EngineCore,
    instance_id: UUID,
    modifications: Mapping[str, Any] | None,
    deletions: Sequence[str] = (),
) -> None:
    """Set ``modifications``, then remove ``deletions`` (a name in both is refused). A name
    to remove that the instance does not have is no error, as in Camunda."""
    checked = check_variables(modifications, where=f"variables of instance {instance_id}")
    names = list(dict.fromkeys(deletions))
    both = sorted(set(names) & set(checked))
    if both:
        raise InvalidOperation(f"variables both set and deleted: {', '.join(both)}")
    if not checked and not names:
        return

    def run() -> None:
        with core.transaction(OPERATOR) as tx:
            inst = tx.locked_instance(instance_id)
            if inst is None or inst.state not in LIVE_INSTANCE:
                what = "does not exist" if inst is None else f"has ended ({inst.state})"
                raise NotFound(f"process instance {instance_id} {what}")
            tx.write_variables(instance_id, dict(checked))
            gone = variables.delete(tx.conn, instance_id, names)
            if gone:
                tx.history.engine(
                    instance_id=instance_id,
                    at=tx.now,
                    type=EngineEvent.VARIABLES_DELETED,
                    actor=tx.actor,
                    data={"names": gone},
                )

    core.retrying(run)

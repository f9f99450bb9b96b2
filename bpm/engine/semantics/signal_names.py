"""Which tokens at template catches a thrown signal reaches (``definitions.signal_names``).

Camunda 7 evaluates a catching signal name when the subscription is made; bpm evaluates it
when a signal is thrown, for each token waiting there, over the variables the token sees and
its instance's business key (the same name unless the variables change while it waits:
docs/bpmn.md). A template that fails to evaluate, or gives no signal name, skips that token
only: one instance's missing variable must not fail another instance's throw. A delivery
evaluates it again (``catches``), as it re-checks a literal name, so a token whose name
changed since the throw is skipped like one that moved.
"""

from __future__ import annotations

from uuid import UUID

from bpm.definitions.mappings import evaluate
from bpm.definitions.model import ProcessGraph
from bpm.definitions.parse.patterns import MESSAGE_PATTERN
from bpm.definitions.signal_names import cached, could_give, execution
from bpm.engine.core.tx import Tx
from bpm.engine.semantics import scopes
from bpm.errors import BpmError
from bpm.store.rows import TokenRow
from bpm.store.signals import Pick, Waiter


def evaluated(
    tx: Tx, g: ProcessGraph, tok: TokenRow, name: str, business_key: str | None
) -> str | None:
    """``name`` as ``tok`` reads it now: a literal as it is, a template evaluated; None when
    it fails or gives no signal name."""
    template = cached(name)
    if template is None:
        return name
    view = dict(scopes.view(tx, g, tok))
    view["execution"] = execution(tok.instance_id, business_key)
    try:
        got = evaluate((template,), view)["signal"]
    except BpmError:
        return None
    return got if isinstance(got, str) and MESSAGE_PATTERN.match(got) else None


def catches(
    tx: Tx, g: ProcessGraph, tok: TokenRow, name: str | None, thrown: str, business_key: str | None
) -> bool:
    """Whether a catch written ``name`` (literal or template) takes the signal ``thrown``
    for ``tok``."""
    if name is None:
        return False
    if cached(name) is None:
        return name == thrown
    return evaluated(tx, g, tok, name, business_key) == thrown


class Picker:
    """The snapshot's choice among template catches for the thrown name (``store.signals.
    throw``): only templates whose literal text fits the name, then each token's evaluation."""

    def __init__(self, tx: Tx, thrown: str) -> None:
        self.tx, self.thrown = tx, thrown

    def templates(self, found: list[str]) -> list[str]:
        return [t for t in found if could_give(t, self.thrown)]

    def __call__(self, waiters: list[Waiter]) -> list[Waiter]:
        tx, out = self.tx, []
        graphs: dict[UUID, ProcessGraph] = {}
        for w in waiters:
            tok = tx.token(w.token_id)
            if tok is None or tx.graph_for is None:
                continue
            g = graphs.get(w.instance_id)
            if g is None:
                g = graphs[w.instance_id] = tx.graph_for(w.instance_id)
            if evaluated(tx, g, tok, w.template, w.business_key) == self.thrown:
                out.append(w)
        return out


def picker(tx: Tx, thrown: str) -> Pick:
    """What ``store.signals.throw`` asks about template catches when ``thrown`` is thrown."""
    return Picker(tx, thrown)

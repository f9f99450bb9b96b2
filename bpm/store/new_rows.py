"""The rows a transaction creates (PostgreSQL): a start's instance, new tokens and their
links, written by the write batch's statement (``bpm.store.batch``) or, when another
statement comes first, by a statement of their own sent before it (``db.defer_write``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from bpm.store import instances, tokens
from bpm.store.batch_sql import flush_sql
from bpm.store.json_rows import encode_rows
from bpm.store.rows import InstanceRow, TokenRow

#: The columns of a new instance's row (``InstanceRow``), as plain ``str`` for orjson.
_INSTANCE = tuple(str(c.name) for c in instances.COLUMNS)
#: The columns a new token is written with, those of ``TokenRow`` (``nudged_at`` starts NULL).
NEW_TOKEN_COLUMNS = tuple(str(c.name) for c in tokens.COLUMNS)


@dataclass
class NewRows:
    """Kept apart from the batch's other writes because they may go first, alone: a row
    must exist before any statement of its transaction reads, locks or names it."""

    instances: list[InstanceRow] = field(default_factory=list)
    tokens: list[TokenRow] = field(default_factory=list)
    links: list[tuple[UUID, UUID, str]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.instances) + len(self.tokens) + len(self.links)

    def parts(self) -> dict[str, Any]:
        """The write statement's parts (``batch_sql.PARTS``) these rows need, by name."""
        return {"i": self.instances, "k": self.tokens, "l": self.links}

    def params(self) -> dict[str, Any]:
        """The parameters of those parts."""
        return {
            "i": encode_rows([{c: getattr(row, c) for c in _INSTANCE} for row in self.instances]),
            "ni": len(self.instances),
            "k": encode_rows(
                [{c: getattr(row, c) for c in NEW_TOKEN_COLUMNS} for row in self.tokens]
            ),
            "l": encode_rows(
                [
                    {"parent_token_id": p, "child_token_id": c, "link_type": k}
                    for p, c, k in self.links
                ]
            ),
        }

    def sent_alone(self) -> tuple[str, dict[str, Any]]:
        """The statement writing the rows so far, sent by itself (``db.defer_write``): they
        count as written from now on."""
        params = self.params()
        parts = frozenset(p for p, there in self.parts().items() if there)
        self.instances, self.tokens, self.links = [], [], []
        return flush_sql(parts), params

    def fold_moves(self, token_moves: dict[UUID, tuple[int, TokenRow]]) -> None:
        """A token still to be inserted is inserted as the transaction leaves it: its moves
        (under version 0, its own) are taken out of ``token_moves``, since they would be
        updates of a row the statement does not see yet."""
        at = {row.id: i for i, row in enumerate(self.tokens)}
        for token_id in [t for t in token_moves if t in at]:
            self.tokens[at[token_id]] = token_moves.pop(token_id)[1]

"""Deployments: the files deployed together, and which deployment each definition came from.

- deployments: one row per deploy (of one or several files at once): its name, its source
  (who deployed it: ``Camunda Modeler``, ``bpm deploy``, ...) and when.
- deployment_resources: the files of a deployment as they were deployed, byte for byte, each
  with its name and a SHA-256 of its content (a deploy of changed files only compares them).
- process_definitions.deployment_id, .resource, .version_tag and
  decision_definitions.deployment_id, .resource: the deployment and the file a definition
  came from; the process's ``camunda:versionTag`` as a column, to filter on it.

Each definition deployed before this revision gets a deployment of its own (named for its key,
source ``migration 0014``, its creation time) holding the file it was deployed from, so every
definition belongs to a deployment.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-11
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import sqlalchemy as sa
from alembic import op

from bpm.store.types import JsonValue, UtcDateTime

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_SUFFIX = {"bpmn": ".bpmn", "json": ".json"}


def upgrade() -> None:
    op.create_table(
        "deployments",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("source", sa.Text(), nullable=True),
        sa.Column("deployment_time", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deployments")),
    )
    op.create_index("ix_deployments_deployment_time", "deployments", ["deployment_time"])
    op.create_table(
        "deployment_resources",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("deployment_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("checksum", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["deployment_id"],
            ["deployments.id"],
            name=op.f("fk_deployment_resources_deployment_id_deployments"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deployment_resources")),
        sa.UniqueConstraint(
            "deployment_id", "name", name=op.f("uq_deployment_resources_deployment_id_name")
        ),
    )
    op.create_index(
        "ix_deployment_resources_name_checksum", "deployment_resources", ["name", "checksum"]
    )
    with op.batch_alter_table("process_definitions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("deployment_id", sa.Uuid(), nullable=True))
        batch_op.add_column(sa.Column("resource", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("version_tag", sa.Text(), nullable=True))
        batch_op.create_index("ix_process_definitions_deployment_id", ["deployment_id"])
    with op.batch_alter_table("decision_definitions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("deployment_id", sa.Uuid(), nullable=True))
        batch_op.add_column(sa.Column("resource", sa.Text(), nullable=True))
        batch_op.create_index("ix_decision_definitions_deployment_id", ["deployment_id"])
    _backfill()


def _backfill() -> None:
    """A deployment per existing definition, holding the file it was deployed from."""
    conn = op.get_bind()
    deployments = sa.table(
        "deployments",
        sa.column("id", sa.Uuid()),
        sa.column("name", sa.Text()),
        sa.column("source", sa.Text()),
        sa.column("deployment_time", UtcDateTime()),
    )
    resources = sa.table(
        "deployment_resources",
        sa.column("id", sa.Uuid()),
        sa.column("deployment_id", sa.Uuid()),
        sa.column("name", sa.Text()),
        sa.column("content", sa.LargeBinary()),
        sa.column("checksum", sa.Text()),
    )
    for table_name, has_graph in (("process_definitions", True), ("decision_definitions", False)):
        columns: list[sa.ColumnClause[Any]] = [
            sa.column("id", sa.Uuid()),
            sa.column("key", sa.Text()),
            sa.column("source", sa.Text()),
            sa.column("created_at", UtcDateTime()),
            sa.column("deployment_id", sa.Uuid()),
            sa.column("resource", sa.Text()),
        ]
        if has_graph:
            columns += [
                sa.column("source_format", sa.Text()),
                sa.column("graph", JsonValue),
                sa.column("version_tag", sa.Text()),
            ]
        table = sa.table(table_name, *columns)
        wanted = [table.c.id, table.c.key, table.c.source, table.c.created_at]
        if has_graph:
            wanted += [table.c.source_format, table.c.graph]
        for row in conn.execute(sa.select(*wanted)).fetchall():
            deployment_id = uuid.uuid4()
            if has_graph:
                resource = f"{row.key}{_SUFFIX.get(row.source_format, '.txt')}"
            else:
                resource = f"{row.key}.dmn"
            content = str(row.source).encode("utf-8", "surrogatepass")
            conn.execute(
                deployments.insert().values(
                    id=deployment_id,
                    name=row.key,
                    source="migration 0014",
                    deployment_time=row.created_at,
                )
            )
            conn.execute(
                resources.insert().values(
                    id=uuid.uuid4(),
                    deployment_id=deployment_id,
                    name=resource,
                    content=content,
                    checksum=hashlib.sha256(content).hexdigest(),
                )
            )
            change: dict[str, object] = {"deployment_id": deployment_id, "resource": resource}
            if has_graph:
                graph = row.graph if isinstance(row.graph, dict) else {}
                tag = graph.get("versionTag")
                change["version_tag"] = tag if isinstance(tag, str) else None
            conn.execute(table.update().where(table.c.id == row.id).values(**change))


def downgrade() -> None:
    with op.batch_alter_table("decision_definitions", schema=None) as batch_op:
        batch_op.drop_index("ix_decision_definitions_deployment_id")
        batch_op.drop_column("resource")
        batch_op.drop_column("deployment_id")
    with op.batch_alter_table("process_definitions", schema=None) as batch_op:
        batch_op.drop_index("ix_process_definitions_deployment_id")
        batch_op.drop_column("version_tag")
        batch_op.drop_column("resource")
        batch_op.drop_column("deployment_id")
    op.drop_index("ix_deployment_resources_name_checksum", table_name="deployment_resources")
    op.drop_table("deployment_resources")
    op.drop_index("ix_deployments_deployment_time", table_name="deployments")
    op.drop_table("deployments")

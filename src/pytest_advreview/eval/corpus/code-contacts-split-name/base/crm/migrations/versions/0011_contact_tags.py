"""contact tags

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"


def upgrade() -> None:
    op.create_table(
        "contact_tags",
        sa.Column("contact_id", sa.Integer, sa.ForeignKey("contacts.id"), primary_key=True),
        sa.Column("tag", sa.String(64), primary_key=True),
    )


def downgrade() -> None:
    op.drop_table("contact_tags")

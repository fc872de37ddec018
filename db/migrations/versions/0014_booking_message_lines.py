"""booking message lines: the quote a booking's Slack message shows above its progress, kept in the ledger

The lines were kept in the memory of the process that posted the message, so an update made by another replica,
or after a restart, lost them. `message_lines` holds them (a JSON list of strings, in the owner's language).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01 03:50:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('bookings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('message_lines', sqlmodel.sql.sqltypes.AutoString(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('bookings', schema=None) as batch_op:
        batch_op.drop_column('message_lines')

"""outbox sending: a row handed to its channel and not yet settled, so a redelivery knows it may have been sent

A worker killed after Slack accepted a message and before it marked the row delivered left no trace of the send,
and the row was posted again after the restart. `sending` is set when a row is claimed and cleared when the
outcome is known (delivered, given up, or "not sent, try later"); a row claimed while it is still set is looked
up in its conversation (by the key the message carries in its metadata) before it is posted again.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01 11:00:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.add_column(sa.Column('sending', sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.drop_column('sending')

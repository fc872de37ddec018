"""alert actions: the buttons of an alert, kept so that a redelivery carries them too

An overheat alert carries a Replace button. When its first delivery failed (Slack or the pager down), the
redelivery sent the text alone, so on-call lost the one-click way to act on it.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29 22:15:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('actions', sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.drop_column('actions')

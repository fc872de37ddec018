"""alert paging: what PagerDuty accepted of each alert, and when to send it again

A trigger or resolve that PagerDuty did not take (429, 5xx, unreachable) was retried only together with the
alerts-channel post, so a redelivery posted the alert to Slack again, and a failed resolve was dropped, leaving the
incident open for ever; a 400 (an event PagerDuty will never take) was retried ten times. PagerDuty now has its own
state per alert: the last event it accepted, its final refusal, and when the missing event is due again.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30 18:30:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('paged', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.add_column(sa.Column('pager_error', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.add_column(sa.Column('pager_attempts', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('pager_due_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
        batch_op.create_index(batch_op.f('ix_alerts_pager_due_at'), ['pager_due_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_alerts_pager_due_at'))
        batch_op.drop_column('pager_due_at')
        batch_op.drop_column('pager_attempts')
        batch_op.drop_column('pager_error')
        batch_op.drop_column('paged')

"""outbox: notices owed to Slack or PagerDuty, written in the transaction of the state change that causes them

The engine no longer calls Slack: it writes a notice (domain.notices) here, and a delivery worker claims due rows,
renders and sends them, and marks a row delivered only after the channel accepted it. One row per (channel,
notice key): a retried use case owes the same notice once.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-30 19:30:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'outbox',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('channel', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column('notice_key', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column('booking_id', sa.Integer(), nullable=True),
        sa.Column('payload', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column('due_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column('claimed_until', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('delivered_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column('failed_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column('last_error', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('channel', 'notice_key', name='uq_outbox_channel_key'),
    )
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.create_index('ix_outbox_pending', ['delivered_at', 'due_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_outbox_booking_id'), ['booking_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_outbox_booking_id'))
        batch_op.drop_index('ix_outbox_pending')
    op.drop_table('outbox')

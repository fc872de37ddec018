"""booting: follow a launched machine until it is reachable, and owe its owner the ready DM until it is sent

A launch returns a machine that is still booting on every real cloud. The booking now stays `booting` (a state
string: no schema change) until `describe` says it is reachable: `next_attempt_at` holds its next poll,
`boot_polls` counts them, `ready_at` is when it became reachable (the idle and "no telemetry" clocks start
there). The ready DM is owed from the moment the booking turns active (`ready_dm_due_at`, in the same
transaction) until it was sent, so a crash in between never loses it. The DM carries an agent token of its own,
kept hashed like the start command's (`dm_token_hash`): the DM may be sent by another replica than the one
that launched, which never saw the start command's token.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 10:00:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('bookings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('ready_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column('boot_polls', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('ready_dm_due_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True))
        batch_op.add_column(sa.Column('dm_token_hash', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.create_index(batch_op.f('ix_bookings_dm_token_hash'), ['dm_token_hash'], unique=False)
        batch_op.create_index(batch_op.f('ix_bookings_ready_dm_due_at'), ['ready_dm_due_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('bookings', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_bookings_ready_dm_due_at'))
        batch_op.drop_index(batch_op.f('ix_bookings_dm_token_hash'))
        batch_op.drop_column('dm_token_hash')
        batch_op.drop_column('ready_dm_due_at')
        batch_op.drop_column('boot_polls')
        batch_op.drop_column('ready_at')

"""bookings by owner and state: one index for the per-person GPU limit checked on every booking

count_gpus_held (owner = ? AND state IN (…)) walked every booking a person ever made through ix_bookings_owner;
with (owner, state) it reads only the ones still held. The new index's owner prefix serves the owner-only
lookups, so ix_bookings_owner goes.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 21:45:00
"""

from alembic import op


revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_bookings_owner_state', 'bookings', ['owner', 'state'], unique=False)
    op.drop_index('ix_bookings_owner', table_name='bookings')


def downgrade() -> None:
    op.create_index('ix_bookings_owner', 'bookings', ['owner'], unique=False)
    op.drop_index('ix_bookings_owner_state', table_name='bookings')

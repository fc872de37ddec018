"""bookings_released: an index on (state, released_at), so that wait_for_cheaper's forecast reads only the bookings
released in its window (how much of their booked time they were held), not every released booking ever

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-05 11:55:00
"""

from alembic import op


revision = '0022'
down_revision = '0021'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_bookings_state_released', 'bookings', ['state', 'released_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_bookings_state_released', table_name='bookings')

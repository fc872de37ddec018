"""telemetry samples indexed by time, for housekeeping that deletes the oldest in batches

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01 02:40:00
"""

from alembic import op


revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_telemetry_at', 'telemetry_samples', ['at'])


def downgrade() -> None:
    op.drop_index('ix_telemetry_at', table_name='telemetry_samples')

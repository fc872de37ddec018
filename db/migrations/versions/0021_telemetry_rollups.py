"""telemetry_rollups: samples older than what the idle and health checks read, rolled up per booking, GPU and
interval ([retention] telemetry_rollup) by the housekeeping job, which deletes the raw rows it rolled up

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-05 05:50:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('telemetry_rollups',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('booking_id', sa.Integer(), nullable=False),
    sa.Column('gpu_index', sa.Integer(), nullable=False),
    sa.Column('bucket', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('first_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('last_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.Column('samples', sa.Integer(), nullable=False),
    sa.Column('util_n', sa.Integer(), nullable=False),
    sa.Column('util_sum', sa.Float(), nullable=False),
    sa.Column('util_min', sa.Float(), nullable=True),
    sa.Column('util_max', sa.Float(), nullable=True),
    sa.Column('temp_max', sa.Float(), nullable=True),
    sa.Column('mem_n', sa.Integer(), nullable=False),
    sa.Column('mem_sum', sa.Float(), nullable=False),
    sa.Column('processes_min', sa.Integer(), nullable=True),
    sa.Column('processes_max', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['booking_id'], ['bookings.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('uq_telemetry_rollup', 'telemetry_rollups', ['booking_id', 'gpu_index', 'bucket'], unique=True)
    op.create_index('ix_telemetry_rollup_bucket', 'telemetry_rollups', ['bucket'])


def downgrade() -> None:
    op.drop_index('ix_telemetry_rollup_bucket', table_name='telemetry_rollups')
    op.drop_index('uq_telemetry_rollup', table_name='telemetry_rollups')
    op.drop_table('telemetry_rollups')

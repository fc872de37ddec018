"""simulated machines: the simulated cloud's running machines, so that the demo's cloud outlives a restart

Restarting `make demo` lost the simulated cloud (it lived in memory) while the ledger kept its bookings: every
active booking was then "released" as lost, with alerts. The demo now keeps the machines in its own database.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 16:30:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'simulated_machines',
        sa.Column('provider', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column('instance_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column('name', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column('region', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column('gpu', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column('count', sa.Integer(), nullable=False),
        sa.Column('ssh', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column('launched_at', sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint('provider', 'instance_id'),
    )


def downgrade() -> None:
    op.drop_table('simulated_machines')

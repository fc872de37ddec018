"""telemetry_samples: how many compute processes hold each GPU and their GPU memory (`processes`,
`process_mem_mib`; NULL when the agent does not say: older agents, a failed query);
bookings: which rule sent the last idle reminder (`idle_rule`: "idle" for utilisation, "no_process")

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-05 05:00:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('telemetry_samples', schema=None) as batch_op:
        batch_op.add_column(sa.Column('processes', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('process_mem_mib', sa.Float(), nullable=True))
    with op.batch_alter_table('bookings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('idle_rule', sqlmodel.sql.sqltypes.AutoString(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('bookings', schema=None) as batch_op:
        batch_op.drop_column('idle_rule')
    with op.batch_alter_table('telemetry_samples', schema=None) as batch_op:
        batch_op.drop_column('process_mem_mib')
        batch_op.drop_column('processes')

"""telemetry_samples: utilisation and temperature may be unknown (a MIG-enabled GPU reports no utilisation);
alerts: the crossings the hourly page cap folded into an alert instead of paging (`folded`, `details`);
agent_tokens: every agent token a ready DM gave stays valid until its booking ends;
telemetry_samples: one sample per booking, GPU and sample time (duplicates kept before are dropped, oldest kept)

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02 02:00:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('agent_tokens',
    sa.Column('token_hash', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('booking_id', sa.Integer(), nullable=False),
    sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['booking_id'], ['bookings.id'], ),
    sa.PrimaryKeyConstraint('token_hash')
    )
    with op.batch_alter_table('agent_tokens', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_agent_tokens_booking_id'), ['booking_id'], unique=False)
    with op.batch_alter_table('telemetry_samples', schema=None) as batch_op:
        batch_op.alter_column('util', existing_type=sa.Float(), nullable=True)
        batch_op.alter_column('temp_c', existing_type=sa.Float(), nullable=True)
    op.execute("DELETE FROM telemetry_samples WHERE id NOT IN (SELECT MIN(id) FROM telemetry_samples "
               "GROUP BY booking_id, gpu_index, at)")
    op.create_index('uq_telemetry_sample', 'telemetry_samples', ['booking_id', 'gpu_index', 'at'], unique=True)
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('folded', sa.Integer(), nullable=False, server_default='0'))
        batch_op.add_column(sa.Column('details', sqlmodel.sql.sqltypes.AutoString(), nullable=True))


def downgrade() -> None:
    op.drop_index('uq_telemetry_sample', table_name='telemetry_samples')
    with op.batch_alter_table('agent_tokens', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_agent_tokens_booking_id'))
    op.drop_table('agent_tokens')
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.drop_column('details')
        batch_op.drop_column('folded')
    op.execute("DELETE FROM telemetry_samples WHERE util IS NULL OR temp_c IS NULL")
    with op.batch_alter_table('telemetry_samples', schema=None) as batch_op:
        batch_op.alter_column('util', existing_type=sa.Float(), nullable=False)
        batch_op.alter_column('temp_c', existing_type=sa.Float(), nullable=False)

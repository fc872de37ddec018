"""telemetry_samples: utilisation and temperature may be unknown (a MIG-enabled GPU reports no utilisation)

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02 02:00:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('telemetry_samples', schema=None) as batch_op:
        batch_op.alter_column('util', existing_type=sa.Float(), nullable=True)
        batch_op.alter_column('temp_c', existing_type=sa.Float(), nullable=True)


def downgrade() -> None:
    op.execute("DELETE FROM telemetry_samples WHERE util IS NULL OR temp_c IS NULL")
    with op.batch_alter_table('telemetry_samples', schema=None) as batch_op:
        batch_op.alter_column('util', existing_type=sa.Float(), nullable=False)
        batch_op.alter_column('temp_c', existing_type=sa.Float(), nullable=False)

"""rate gates: the next free turn at a paced vendor API, shared by every replica on the database

Lambda allows about one request per second and one launch per 12 seconds per account. Each replica kept its own
gate in memory, so two replicas together went twice as fast as Lambda allows and drew 429s.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30 16:30:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('rate_gates',
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('next_at', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )


def downgrade() -> None:
    op.drop_table('rate_gates')

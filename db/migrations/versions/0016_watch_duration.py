"""watches: the booking length a watch waits for (`/gpu watch h100x8 2h`), which its Book now books

`duration_s` is nullable: a watch stored before this revision has none, and its Book now books the team's
`booking.default_duration` as it did.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02 10:00:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('watches', schema=None) as batch_op:
        batch_op.add_column(sa.Column('duration_s', sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('watches', schema=None) as batch_op:
        batch_op.drop_column('duration_s')

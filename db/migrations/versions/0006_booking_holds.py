"""booking holds: the estimate a waiting booking holds against budgets, and who approved it over budget

The budget check counted only running bookings, so scheduled, queued and awaiting-approval ones were invisible
to it (issue #17). Each booking now keeps the estimate it holds until it runs (team currency), and the admin who
approved it over budget, so the re-check at launch does not hold it a second time. Bookings waiting when this
runs hold nothing until their launch re-check holds the offer it tries.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 16:00:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('bookings', schema=None) as batch_op:
        batch_op.add_column(sa.Column('estimate', sa.Numeric(precision=18, scale=6), nullable=True))
        batch_op.add_column(sa.Column('approved_by', sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('bookings', schema=None) as batch_op:
        batch_op.drop_column('approved_by')
        batch_op.drop_column('estimate')

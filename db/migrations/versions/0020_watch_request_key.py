"""watches: the Slack request that made each (`request_key`, from its trigger_id; unique), so a second delivery of
one `/gpu watch` adds no second watch

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-05 05:40:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('watches', schema=None) as batch_op:
        batch_op.add_column(sa.Column('request_key', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
        batch_op.create_unique_constraint('uq_watches_request_key', ['request_key'])


def downgrade() -> None:
    with op.batch_alter_table('watches', schema=None) as batch_op:
        batch_op.drop_constraint('uq_watches_request_key', type_='unique')
        batch_op.drop_column('request_key')

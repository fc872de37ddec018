"""inbox: signed Slack commands and interactions, recorded before their ack, done when their work finished

Rows without done_at after a crash are answered on start through their response_url.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-30 20:50:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'inbox',
        sa.Column('key', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column('response_url', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column('received_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column('done_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.Column('outcome', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.PrimaryKeyConstraint('key'),
    )
    op.create_index('ix_inbox_done_at', 'inbox', ['done_at'])


def downgrade() -> None:
    op.drop_index('ix_inbox_done_at', table_name='inbox')
    op.drop_table('inbox')

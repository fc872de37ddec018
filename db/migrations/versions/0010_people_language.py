"""people: the language each person chose with `/gpu lang`

One row per person who chose; `language` is `en` or `zh` (None: follow their Slack locale, then team.language).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30 19:30:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'people',
        sa.Column('user_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column('language', sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column('updated_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint('user_id'),
    )


def downgrade() -> None:
    op.drop_table('people')

"""booking quoted: the quote a booking was booked on, as facts; its message's rendered lines go

`message_lines` kept a booking message's quote as Slack text in its owner's language at posting time, replayed
under every later update: a fallback kept the first quote's price, an extension its length, a language switch its
English. `quoted` keeps the quote as data (the BookingRequested notice's record, JSON) and the message is drawn
afresh at each delivery from the booking as the ledger holds it then. Old bookings' lines are dropped: their
messages show the booking's own price and length from their next update on.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-02 01:40:00
"""

from alembic import op
import sqlalchemy as sa
import sqlmodel


revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


# Plain ALTER TABLE, not a batch: a batch rebuilds the table on SQLite, and dropping `bookings` fails its foreign
# keys once rows refer to it. SQLite drops a plain column in place (3.35 and later), as PostgreSQL does.
def upgrade() -> None:
    op.add_column('bookings', sa.Column('quoted', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
    op.drop_column('bookings', 'message_lines')


def downgrade() -> None:
    op.add_column('bookings', sa.Column('message_lines', sqlmodel.sql.sqltypes.AutoString(), nullable=True))
    op.drop_column('bookings', 'quoted')

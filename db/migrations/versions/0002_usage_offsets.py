"""usage offsets: each usage interval's whole seconds into its booking's continuous use

Tiered prices depend on how far into continuous use a stretch lies; storing it lets reports sum the seconds
beyond each tier threshold in SQL instead of pricing every stretch of a tiered provider one by one.
Existing rows are backfilled from bookings.started_at with the rule of domain.pricing.use_offset
(max(0, whole seconds from started_at to start); 0 when started_at is unknown).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-15 10:00:00
"""

from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None

_BATCH = 20_000
_usage = sa.table('usage_intervals', sa.column('id', sa.Integer()), sa.column('booking_id', sa.Integer()),
                  sa.column('start', sa.DateTime(timezone=True)), sa.column('offset_s', sa.Integer()))
_bookings = sa.table('bookings', sa.column('id', sa.Integer()), sa.column('started_at', sa.DateTime(timezone=True)))


def upgrade() -> None:
    op.add_column('usage_intervals', sa.Column('offset_s', sa.Integer(), nullable=True))
    bind = op.get_bind()
    if bind.dialect.name == 'postgresql':
        # EXTRACT(EPOCH FROM interval) is numeric (exact) on PostgreSQL 14+; floor = int() for what max keeps.
        op.execute('UPDATE usage_intervals AS u SET offset_s = COALESCE(GREATEST(0, '
                   'FLOOR(EXTRACT(EPOCH FROM u.start - b.started_at)))::integer, 0) '
                   'FROM bookings AS b WHERE b.id = u.booking_id')
    else:
        _backfill_in_python(bind)
    op.create_index('ix_usage_offset_unknown', 'usage_intervals', ['start'], unique=False,
                    postgresql_where=sa.text('offset_s IS NULL'), sqlite_where=sa.text('offset_s IS NULL'))


def _backfill_in_python(bind) -> None:
    after = 0
    while True:
        rows = bind.execute(sa.select(_usage.c.id, _usage.c.start, _bookings.c.started_at)
                            .select_from(_usage.join(_bookings, _bookings.c.id == _usage.c.booking_id))
                            .where(_usage.c.id > after).order_by(_usage.c.id).limit(_BATCH)).all()
        if not rows:
            return
        bind.execute(sa.update(_usage).where(_usage.c.id == sa.bindparam('row_id'))
                     .values(offset_s=sa.bindparam('offset')),
                     [{'row_id': i, 'offset': max(0, int((start - (started or start)).total_seconds()))}
                      for i, start, started in rows])
        after = rows[-1][0]


def downgrade() -> None:
    with op.batch_alter_table('usage_intervals', schema=None) as batch_op:
        batch_op.drop_index('ix_usage_offset_unknown')
        batch_op.drop_column('offset_s')

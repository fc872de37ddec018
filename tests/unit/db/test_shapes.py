"""The column form of a booking's alternative shapes, read and written only at the ledger's edge."""

from __future__ import annotations

from gpubot.db.shapes import decode_shapes, encode_shapes
from gpubot.domain.model import Shape


def test_shapes_round_trip_through_their_column_form():
    shapes = (Shape("h100", 2), Shape("a100-80g", 4), Shape("rtx4090", 8))
    assert encode_shapes(shapes) == "h100x2,a100-80gx4,rtx4090x8"
    assert decode_shapes(encode_shapes(shapes)) == shapes
    assert encode_shapes(()) is None and decode_shapes(None) == ()

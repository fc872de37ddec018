"""The compact text of alternatives, and the GPU memory of a shape."""

from __future__ import annotations

from gpubot.domain.advice import decode_shapes, encode_shapes, total_memory_gib


def test_shapes_round_trip_through_their_text_form():
    shapes = [("h100", 2), ("a100-80g", 4), ("rtx4090", 8)]
    assert encode_shapes(shapes) == "h100x2,a100-80gx4,rtx4090x8"
    assert decode_shapes(encode_shapes(shapes)) == shapes
    assert encode_shapes([]) is None and decode_shapes(None) == []


def test_memory_comes_from_the_catalog():
    assert total_memory_gib("a100-80g", 2) == 160 and total_memory_gib("nonsense", 2) == 0

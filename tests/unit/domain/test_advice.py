"""Advice when a booking lands on another shape, and the compact text of alternatives."""

from __future__ import annotations

from gpubot.domain.advice import decode_shapes, encode_shapes, shape_advice, total_memory_gib


def test_shapes_round_trip_through_their_text_form():
    shapes = [("h100", 2), ("a100-80g", 4), ("rtx4090", 8)]
    assert encode_shapes(shapes) == "h100x2,a100-80gx4,rtx4090x8"
    assert decode_shapes(encode_shapes(shapes)) == shapes
    assert encode_shapes([]) is None and decode_shapes(None) == []


def test_the_same_shape_needs_no_advice():
    assert shape_advice(("a100", 4), ("a100", 4)) is None


def test_less_memory_asks_for_mixed_precision_and_the_accumulation_multiplier():
    # 4× A100 40GB = 160 GiB; 2× RTX 4090 24GB = 48 GiB: 160/48 = 3.33 → accumulate over 4 steps
    text = shape_advice(("a100", 4), ("rtx4090", 2))
    assert "2× RTX 4090 24GB (48 GiB)" in text and "4× A100 40GB (160 GiB)" in text
    assert "mixed precision" in text and "gradient accumulation over 4 steps" in text
    assert "3.3× less GPU memory" in text


def test_fewer_gpus_with_as_much_memory_keeps_the_batch_by_a_count_multiplier():
    # 4× A100 40GB (160 GiB) → 2× H100 80GB (160 GiB): half the GPUs, same memory
    text = shape_advice(("a100", 4), ("h100", 2))
    assert "raise the per-GPU batch ×2 or accumulate gradients over 2 steps" in text


def test_more_memory_carries_the_settings_over():
    assert "carry over" in shape_advice(("a100", 2), ("a100-80g", 2))  # 80 GiB → 160 GiB, same GPU count


def test_memory_comes_from_the_catalog():
    assert total_memory_gib("a100-80g", 2) == 160 and total_memory_gib("nonsense", 2) == 0

"""The grammar of living with a shortage: --cuda, --image, `or` alternatives and `watch` alone."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from gpubot.domain.errors import ParseError
from gpubot.domain.grammar import Book, Quote, Shape, Watches, parse

NOW = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def test_book_takes_a_cuda_floor_and_an_image():
    cmd = parse("book a100x4 or h100x2 6h --cuda 12.1 --image pytorch/pytorch:2.3.0-cuda12.1", now=NOW)
    assert isinstance(cmd, Book)
    assert cmd.alternatives == (Shape("h100", 2),)
    assert cmd.cuda == "12.1" and cmd.image == "pytorch/pytorch:2.3.0-cuda12.1"
    assert parse("book a100 --cuda=cuda11.8", now=NOW).cuda == "11.8"
    assert parse("book a100 --image ami-0abc123", now=NOW).image == "ami-0abc123"


@pytest.mark.parametrize("text, needle", [
    ("book a100 --cuda 12", "not a CUDA version like 12.1"),
    ("book a100 --cuda latest", "not a CUDA version like 12.1"),
    ("book a100 --cuda 99.1", "not a CUDA version like 12.1"),
    ("book a100 --cuda", "`--cuda` needs a value"),
    ('book a100 --image "my image"', "not an image name"),
    ("book a100 --image ;rm", "not an image name"),
    ("watch a100 --cuda 12.1", "does not apply to `watch`"),
])
def test_bad_cuda_and_image_values_are_refused(text, needle):
    with pytest.raises(ParseError, match=needle):
        parse(text, now=NOW)


def test_quote_takes_a_cuda_floor_too():
    cmd = parse("quote a100x4 or rtx4090x8 --cuda 12.4", now=NOW)
    assert isinstance(cmd, Quote) and cmd.cuda == "12.4" and cmd.alternatives == (Shape("rtx4090", 8),)


def test_watch_alone_lists_the_watches():
    assert parse("watch", now=NOW) == Watches()
    assert parse("watches", now=NOW) == Watches()

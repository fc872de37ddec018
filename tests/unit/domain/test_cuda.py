"""CUDA versions: parsing, AutoDL's integer form, and whether an offer meets a floor."""

from __future__ import annotations

import pytest
from gpubot.domain.cuda import cuda_int, cuda_meets, cuda_shortfall, cuda_version


@pytest.mark.parametrize("text, value", [("12.1", (12, 1)), ("11.8", (11, 8)), ("cuda12.4", (12, 4)),
                                         (" 13.0 ", (13, 0))])
def test_versions_are_read(text, value):
    assert cuda_version(text) == value


@pytest.mark.parametrize("text", ["12", "12.10", "twelve", "7.5", "20.1", "12.1.0", ""])
def test_bad_versions_are_refused_with_the_expected_form(text):
    with pytest.raises(ValueError, match=r"like 12\.1"):
        cuda_version(text)


def test_autodl_integer_form():
    assert cuda_int("12.1") == 121 and cuda_int("11.8") == 118


def test_a_floor_excludes_only_offers_known_to_be_older():
    assert not cuda_meets("11.8", "12.1")
    assert cuda_shortfall("11.8", "12.1") == "max CUDA 11.8 < 12.1"
    assert cuda_meets("12.4", "12.1") and cuda_meets("12.1", "12.1")
    assert cuda_meets(None, "12.1") and cuda_meets("11.8", None)
    assert cuda_shortfall("12.4", "12.1") is None

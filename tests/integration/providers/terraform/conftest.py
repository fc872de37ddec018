"""Fixtures of the Terraform provider's tests: the fake cloud, and one state_dir per session (so the test module
is initialised once per session, as a running gpubot initialises it once per module version)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.terraform_cloud import FakeTerraformCloud


@pytest.fixture
def cloud() -> Iterator[FakeTerraformCloud]:
    fake = FakeTerraformCloud()
    fake.start()
    yield fake
    fake.released.set()  # a held request lets go
    fake.stop()


@pytest.fixture(scope="session")
def state_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("terraform-state")

"""Shared fixtures: databases (SQLite and PostgreSQL, the same tests on both), clocks, policies."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.databases import postgres_url, sqlite_url

pytest_plugins = ["tests.reporting", "tests.slurm_cluster"]  # slurm_cluster: one real cluster per test process

os.environ.setdefault("SKIP_SLACK_SDK_WARNING", "1")
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
# google.auth looks for the GCE metadata server (a link-local address) when it finds no credentials: never here.
os.environ.setdefault("NO_GCE_CHECK", "true")
# moto's EC2 backend loads its regional catalogue of "latest" AMIs (~1,400 images a region, built again for every
# region of every mock) unless pointed at a list: this is moto's own default list of 44 (ec2/resources/amis.json of
# moto 5.2.6), the one the tests name images from. It saves about a quarter of every AWS test's CPU.
os.environ.setdefault("MOTO_AMIS_PATH", str(Path(__file__).parent / "fakes" / "moto_amis.json"))


@pytest.fixture(scope="session")
def sqlite_template_dir(tmp_path_factory) -> Path:
    """Where this test process keeps its migrated SQLite template."""
    return tmp_path_factory.mktemp("templates")


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request, tmp_path, sqlite_template_dir) -> Iterator[str]:
    """The same test on SQLite (a file) and on PostgreSQL (a database of its own), each already at head (copied
    from a template migrated once per run: tests/databases.py)."""
    if request.param == "sqlite":
        yield sqlite_url(tmp_path, sqlite_template_dir)
    else:
        yield from postgres_url()


@pytest.fixture(params=["sqlite", "postgres"])
def empty_database_url(request, tmp_path) -> Iterator[str]:
    """An empty database on SQLite and on PostgreSQL, for the tests of migrating itself."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.db'}"
    else:
        yield from postgres_url(migrated=False)


def pytest_sessionfinish(session) -> None:
    """No process a test started outlives its test process: whatever is still running is killed."""
    import signal

    me = str(os.getpid())
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            parent = next(line.split()[1] for line in status.read_text().splitlines() if line.startswith("PPid:"))
            if parent == me:
                os.kill(int(status.parent.name), signal.SIGKILL)
        except (OSError, StopIteration, ValueError):
            continue


# Test modules that load a heavy vendor library in the test process (Google's Compute client: ~3 s of CPU to import;
# moto, AWS's fake: ~2 s), each importing it only inside its tests: run in one group, one worker imports it instead of
# every worker.
VENDOR_GROUPS = {
    "google-cloud": {"tests/integration/providers/test_gcp.py", "tests/integration/scheduling/test_gcp_zones.py",
                     "tests/integration/gpubot/test_gcp_wiring.py", "tests/unit/providers/test_gcp_wire.py"},
    "moto": {"tests/integration/providers/test_aws.py", "tests/integration/scheduling/test_vendor_errors.py",
             "tests/integration/providers/test_ended_instances.py",
             "tests/integration/providers/test_boot_and_lifetime.py", "tests/e2e/test_image_owners.py"},
}


def pytest_collection_finish(session) -> None:
    """Freeze what collection made (every imported module, every test item): it lives for the whole run, and
    without this each automatic full garbage collection during the tests scans all of it again."""
    gc.freeze()


@pytest.hookimpl(trylast=True)  # after pytest-randomly's shuffle, which it keeps within each part
def pytest_collection_modifyitems(items) -> None:
    """Under pytest-xdist (`--dist loadgroup`), the tests of a module that share a module-scoped fixture (a running
    gpubot, a fake cloud) go to one worker, which starts that fixture once, and so do the tests of a vendor group
    (VENDOR_GROUPS); every other test goes wherever a worker is free. The groups holding a test marked `slow` are
    handed out first: started last, one of them would run alone at the end while the other workers idle."""
    _mark_groups(items)
    slow = {_group_of(item) for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: _group_of(item) not in slow)


def _group_of(item) -> str:
    marker = item.get_closest_marker("xdist_group")
    return marker.args[0] if marker and marker.args else item.nodeid


def _mark_groups(items) -> None:
    for item in items:
        path = item.nodeid.split("::")[0]
        vendor = next((group for group, paths in VENDOR_GROUPS.items() if path in paths), None)
        info = getattr(item, "_fixtureinfo", None)
        definitions = info.name2fixturedefs.values() if info is not None else ()
        if vendor:
            item.add_marker(pytest.mark.xdist_group(vendor))
        elif any(defs and defs[-1].scope == "module" for defs in definitions):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


class Clock:
    """A controllable clock: `now()` and `advance()`."""

    def __init__(self, start: datetime | None = None) -> None:
        self.current = start or datetime(2026, 11, 2, 10, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.current

    def advance(self, **delta: float) -> datetime:
        self.current += timedelta(**delta)
        return self.current


@pytest.fixture
def clock() -> Clock:
    """A controllable clock starting 2026-11-02 10:00 UTC."""
    return Clock()

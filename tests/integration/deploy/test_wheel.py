"""The built distribution exposes one top-level import name, `gpubot`: the wheel is built from a copy of the
source tree, installed into a fresh venv, and its site-packages listed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SOURCES = ["pyproject.toml", "README.md", "domain", "providers", "db", "scheduling", "bot", "gpubot"]
LAYERS = {"domain", "providers", "db", "scheduling", "bot"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built with pip from a copy of the sources (so the build leaves nothing in the repository)."""
    tree, out = tmp_path_factory.mktemp("tree"), tmp_path_factory.mktemp("wheels")
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, tree / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "--disable-pip-version-check",
                    "-w", str(out), str(tree)], check=True, timeout=300)
    return next(out.glob("gpubot-*.whl"))


def test_the_wheel_has_one_top_level_name(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"gpubot", wheel.name.split("-py")[0] + ".dist-info"}
    for layer in LAYERS:  # each folder is mapped into the package, whole
        assert f"gpubot/{layer}/__init__.py" in names
    assert "gpubot/bot/listeners/commands.py" in names and "gpubot/scheduling/replay/__init__.py" in names
    assert "gpubot/db/migrations/versions/0001_ledger_schema.py" in names
    assert "gpubot/defaults.toml" in names and any(n.startswith("gpubot/sandbox/static/") for n in names)


def test_the_wheel_carries_every_package_of_the_source_tree(wheel: Path) -> None:
    """A sub-package missing from pyproject's list is left out of the wheel, and so of the container image,
    while an editable install still finds it."""
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = [init.parent.relative_to(ROOT).as_posix() for name in SOURCES if (ROOT / name).is_dir()
                for init in (ROOT / name).rglob("__init__.py") if "__pycache__" not in init.parts]
    in_wheel = [path if path.split("/")[0] == "gpubot" else f"gpubot/{path}" for path in packages]
    missing = sorted(path for path in in_wheel if f"{path}/__init__.py" not in names)
    assert len(packages) > 10 and not missing, f"left out of the wheel (pyproject [tool.setuptools]): {missing}"


def test_installed_into_a_fresh_venv_it_adds_only_gpubot(wheel: Path, tmp_path: Path) -> None:
    # No pip of its own (ensurepip costs ~7 s of CPU): this environment's pip installs into it (--python).
    venv.EnvBuilder(with_pip=False).create(tmp_path / "venv")
    python = tmp_path / "venv" / "bin" / "python"
    site = Path(subprocess.check_output([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                        text=True).strip())
    before = set(p.name for p in site.iterdir())
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                    "--disable-pip-version-check", str(wheel)], check=True, timeout=300)
    added = {p.name for p in site.iterdir()} - before
    assert {name for name in added if not name.endswith(".dist-info")} == {"gpubot"}
    assert not LAYERS & {p.name for p in site.iterdir()}
    assert (site / "gpubot" / "domain" / "grammar.py").is_file()
    _runs_from_the_wheel(python, site)


def _runs_from_the_wheel(python: Path, site: Path) -> None:
    """What the container runs, from the installed wheel: every module of the serve path imports (the
    dependencies come from this test's own environment, on the path after the wheel's site-packages, without
    its editable finder), and check-config reads the example policy."""
    deps = sysconfig.get_path("purelib")
    code = ("import sys; sys.path.append(sys.argv[1]); import gpubot, gpubot.wiring, gpubot.runtime, gpubot.cli; "
            "print(gpubot.__file__); sys.argv = ['gpubot', 'check-config', '--config', sys.argv[2]]; "
            "from gpubot.cli import main; main()")
    shown = subprocess.run([str(python), "-c", code, deps, str(ROOT / "gpubot.example.toml")], capture_output=True,
                           text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(site)}, cwd=site)
    assert shown.stdout.startswith(str(site / "gpubot")), shown.stdout + shown.stderr
    assert "Traceback" not in shown.stderr and "ModuleNotFoundError" not in shown.stderr, shown.stderr

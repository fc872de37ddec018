"""pyproject.toml says what the code uses: every third-party import is declared, every declared distribution is
imported (or is on the short list below with its reason), and the tools that can turn `make test` red are pinned."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("domain", "providers", "db", "scheduling", "bot", "gpubot")
OURS = {*PACKAGES, "tests", "bench"}
# Declared, yet never named in an import statement, and why.
NOT_IMPORTED = {
    "psycopg": "SQLAlchemy's PostgreSQL driver, chosen by the postgresql+psycopg URL",
    "pytest-timeout": "a pytest plugin, configured by `timeout =` in [tool.pytest.ini_options]",
    "pytest-xdist": "a pytest plugin: `make test` runs the suite with -n (several processes)",
    "pytest-randomly": "a pytest plugin: the tests run in a random order unless -p no:randomly",
    "ruff": "the linter `make lint` runs",
    "playwright": "loaded with pytest.importorskip by the browser test",
}


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement string (`moto[ec2]>=5` → `moto`)."""
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", requirement).group()).lower()


def _declared(project: dict, runtime_only: bool) -> set[str]:
    extras = project["optional-dependencies"]
    groups = [project["dependencies"], *(v for k, v in extras.items() if not (runtime_only and k == "dev"))]
    return {_name(r) for group in groups for r in group if not r.startswith("gpubot")}


@cache
def _imports(roots: tuple[str, ...]) -> dict[str, str]:
    """Top-level third-party module → one file that imports it."""
    found: dict[str, str] = {}
    for root in roots:
        for path in (ROOT / root).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for top in {n.split(".")[0] for n in names} - OURS - set(sys.stdlib_module_names) - {"__future__"}:
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


@cache
def _packages_distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()  # scans every installed distribution: once per run


def _distributions(module: str) -> set[str]:
    return {_name(d) for d in _packages_distributions().get(module, [module])}


def test_every_import_of_the_product_is_declared_outside_dev() -> None:
    declared = _declared(_pyproject()["project"], runtime_only=True)
    missing = {m: f for m, f in _imports(PACKAGES).items() if not _distributions(m) & declared}
    assert not missing, f"imported but not declared in dependencies or a runtime extra: {missing}"


def test_every_import_of_the_tests_and_benchmarks_is_declared() -> None:
    declared = _declared(_pyproject()["project"], runtime_only=False)
    missing = {m: f for m, f in _imports(("tests", "bench")).items() if not _distributions(m) & declared}
    assert not missing, f"imported by tests/bench but not declared: {missing}"


def test_every_declared_distribution_is_used() -> None:
    used = {d for m in _imports((*PACKAGES, "tests", "bench")) for d in _distributions(m)}
    unused = _declared(_pyproject()["project"], runtime_only=False) - used - set(NOT_IMPORTED)
    assert not unused, f"declared but never imported (drop them, or say why in NOT_IMPORTED): {unused}"


def test_ruff_is_pinned_to_one_minor_version_and_typer_is_past_the_click_breakage() -> None:
    dev = {_name(r): r for r in _pyproject()["project"]["optional-dependencies"]["dev"]}
    assert re.fullmatch(r"ruff>=0\.(\d+)(\.\d+)?,<0\.(\d+)", dev["ruff"].replace(" ", ""))
    low, high = re.findall(r"0\.(\d+)", dev["ruff"])[:2]
    assert int(high) == int(low) + 1
    typer = next(r for r in _pyproject()["project"]["dependencies"] if _name(r) == "typer")
    floor = tuple(int(x) for x in re.search(r">=([0-9.]+)", typer).group(1).split("."))
    assert floor >= (0, 16)  # 0.12 – 0.15.3 crash on --help with click >= 8.2 (make_metavar needs ctx)


def test_the_license_is_an_spdx_string() -> None:
    assert _pyproject()["project"]["license"] == "Apache-2.0"

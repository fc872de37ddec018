"""Imports point one way: gpubot → bot → scheduling → {providers, db} → domain. This test walks them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
LAYERS = ["domain", "providers", "db", "scheduling", "bot", "gpubot"]
ALLOWED = {
    "domain": {"domain"},
    "providers": {"providers", "domain"},
    "db": {"db", "domain"},
    "scheduling": {"scheduling", "providers", "db", "domain"},
    "bot": {"bot", "scheduling", "domain"},
    "gpubot": set(LAYERS),
}
THIRD_PARTY_BANNED_IN_DOMAIN = {"slack_bolt", "slack_sdk", "httpx", "sqlmodel", "sqlalchemy", "apscheduler",
                                "boto3", "tenacity", "prometheus_client"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("layer", LAYERS)
def test_no_import_runs_back_up(layer):
    wrong = []
    for path in (ROOT / layer).rglob("*.py"):
        ours = _imports(path) & set(LAYERS)
        if bad := ours - ALLOWED[layer]:
            wrong.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert not wrong, "\n".join(wrong)


def test_domain_uses_no_framework():
    wrong = [f"{p.relative_to(ROOT)}: {sorted(_imports(p) & THIRD_PARTY_BANNED_IN_DOMAIN)}"
             for p in (ROOT / "domain").rglob("*.py") if _imports(p) & THIRD_PARTY_BANNED_IN_DOMAIN]
    assert not wrong, "\n".join(wrong)


def test_providers_and_db_never_import_each_other():
    for a, b in (("providers", "db"), ("db", "providers")):
        assert not [p for p in (ROOT / a).rglob("*.py") if b in _imports(p)]

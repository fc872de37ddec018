"""Imports point one way: gpubot → bot → scheduling → {providers, db} → domain. This test walks them."""

from __future__ import annotations

import ast
import re
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


def _modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _layer(module: str) -> str:
    """`gpubot.scheduling.acquisition.queue` → `scheduling`; `gpubot.cli` → `gpubot`; `httpx.x` → `httpx`."""
    parts = module.split(".")
    if parts[0] == "gpubot" and len(parts) > 1 and parts[1] in LAYERS:
        return parts[1]
    return parts[0]


def _imports(path: Path) -> set[str]:
    return {_layer(module) for module in _modules(path)}


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


_CHAT_SYNTAX = re.compile(r"<@|<!|idle_keep|booking_release")


def test_the_engine_holds_no_chat_syntax():
    """Issue #19: the engine tells notices and the bot words them, so no Slack mention, broadcast or action id is
    written in scheduling/ or domain/ (Slack's `<@U…>` in a command is turned into a bare id by the bot)."""
    found = [f"{path.relative_to(ROOT)}:{n}" for layer in ("scheduling", "domain")
             for path in (ROOT / layer).rglob("*.py")
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if _CHAT_SYNTAX.search(line)]
    assert not found, f"Slack text, mentions or action ids in the engine (render them in bot/notices.py): {found}"


def test_the_layers_are_imported_only_through_the_one_top_level_name():
    code = [p for folder in (*LAYERS, "tests", "bench") for p in (ROOT / folder).rglob("*.py")]
    bare = [f"{p.relative_to(ROOT)} imports {m}" for p in code for m in _modules(p)
            if m.split(".")[0] in set(LAYERS) - {"gpubot"}]
    assert not bare, "import them as gpubot.<layer>:\n" + "\n".join(bare)

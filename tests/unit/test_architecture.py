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
                                "boto3", "tenacity", "prometheus_client", "dateparser"}


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


_NOTICES = {name for name in dir(__import__("gpubot.domain.notices", fromlist=["x"])) if name[:1].isupper()}
_FOR_ONCALL = {"ProviderAlert"}  # on-call's summaries are operators' English, as logs are
_REFUSALS = {"UserError", "Refused", "NotFound", "Forbidden", "NotYours"}


def _calls(layer: str):
    """(path, call, name called) of every call in `layer`, the name being the called function's last part."""
    for path in (ROOT / layer).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                yield path.relative_to(ROOT), node, name


def _worded(node: ast.AST) -> bool:
    """A text built in place: an f-string, a string joined or formatted, or a literal with words in it."""
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
        return _worded(node.left) or _worded(node.right)
    if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("format", "join"):
        return True
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and " " in node.value.strip()


def test_the_engine_words_no_progress_line_and_no_notice():
    """Issue #19: the booking message's progress and every notice but on-call's carry facts, so that the bot
    words them in the reader's language; a sentence written into one in scheduling/ would reach people in English."""
    found = [f"{path}:{call.lineno} {name}" for path, call, name in _calls("scheduling")
             if (name == "show_progress" and any(_worded(arg) for arg in call.args[2:]))
             or (name in _NOTICES - _FOR_ONCALL and any(_worded(k.value) for k in call.keywords))
             or (name == "ProgressStep" and any(k.arg == "text" for k in call.keywords))]
    assert not found, f"English worded in the engine (give facts; the bot words them): {found}"


def test_the_engines_refusals_are_templates_the_catalogs_extract():
    """A refusal raised in scheduling/ is a literal template with its values as parameters (so `make i18n` extracts
    it and the bot shows it translated) or an error that carries facts (domain.errors.OverBudget, NothingSells)."""
    found = [f"{path}:{call.lineno} {name}" for path, call, name in _calls("scheduling")
             if name in _REFUSALS and call.args and not isinstance(call.args[0], ast.Constant)]
    assert not found, f"refusals worded in place (write a template with {{name}} fields): {found}"


# A kind's name written in place of one of its traits, allowed where it names something else.
_NOT_A_KIND = {("scheduling/replay/setup.py", "pool"): "the replay's policy named `pool` (docs/replay.md), which "
                                                        "adds the team's own machines"}


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body
            and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def test_no_shared_module_names_a_provider_kind():
    """Issue #26: a provider kind lives in its own providers/<kind>/ folder, and every other module reads its
    traits from providers/registry.py; a kind's name written elsewhere (docstrings may mention kinds), or a kind's
    module imported, means a new cloud has to touch shared code."""
    from gpubot.providers.registry import all_kinds

    kinds = set(all_kinds())
    folders = {f"gpubot.providers.{p.parent.name}" for p in (ROOT / "providers").glob("*/__init__.py")}
    found = []
    for layer in LAYERS:
        for path in (ROOT / layer).rglob("*.py"):
            where = path.relative_to(ROOT)
            if layer == "providers" and len(where.parts) > 2:
                continue  # inside a kind's own folder
            tree = ast.parse(path.read_text(encoding="utf-8"))
            docs = _docstrings(tree)
            found += [f"{where}:{node.lineno} {node.value!r}" for node in ast.walk(tree)
                      if isinstance(node, ast.Constant) and node.value in kinds and id(node) not in docs
                      and (where.as_posix(), node.value) not in _NOT_A_KIND]
            found += [f"{where} imports {m}" for m in _modules(path) if ".".join(m.split(".")[:3]) in folders]
    assert len(kinds) >= 7 and not found, f"kinds named outside providers/<kind>/ (read the registry): {found}"


# Floors inside scheduling/, bottom to top (docs/architecture.md, "Floors inside scheduling/"): the ground floor
# (the engine's context, the scheduler's lock, the agent's side of a booking, providers' reachability, the probe and
# the circuit breakers), the outbox (delivery.py), on-call alerts, money, booking, acquisition, lifecycle, the front
# desk, the jobs, the replay. A room imports only the rooms below it: an upward import fails this test.
FLOORS = ["engine", "delivery", "alerts", "money", "booking", "acquisition", "lifecycle", "desk", "jobs", "replay"]
_BASE = {"engine", "memory", "metrics", "leader", "agent", "reach", "probe", "breakers"}


def _room(name: str) -> str:
    return "engine" if name in _BASE else name


def _room_of(path: Path) -> str:
    """`scheduling/booking/quotes.py` → `booking`; `scheduling/memory.py` → `engine` (the ground floor)."""
    relative = path.relative_to(ROOT / "scheduling")
    return _room(relative.parts[0] if len(relative.parts) > 1 else relative.stem)


def _upward_imports() -> set[tuple[str, str]]:
    found = set()
    for path in (ROOT / "scheduling").rglob("*.py"):
        room = _room_of(path)
        for module in _modules(path):
            parts = module.split(".")
            target = _room(parts[2]) if parts[:2] == ["gpubot", "scheduling"] and len(parts) > 2 else None
            if target in FLOORS and FLOORS.index(target) > FLOORS.index(room):
                found.add((str(path.relative_to(ROOT)), target))
    return found


def test_every_module_of_scheduling_is_on_a_floor():
    """A new room or top-level module is placed on a floor (FLOORS, or the ground floor's _BASE) before it counts."""
    lost = [str(p.relative_to(ROOT)) for p in (ROOT / "scheduling").rglob("*.py")
            if p != ROOT / "scheduling" / "__init__.py" and _room_of(p) not in FLOORS]
    assert not lost, f"modules of scheduling/ on no floor: {lost}"


def test_scheduling_rooms_import_only_the_floors_below_them():
    assert not _upward_imports(), f"upward imports inside scheduling/: {sorted(_upward_imports())}"


def _our_modules() -> dict[str, Path]:
    """Every module of gpubot by its import name (`gpubot.scheduling.engine`), from the source tree."""
    found = {}
    for layer in LAYERS:
        for path in (ROOT / layer).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            parts = parts[1:] if layer == "gpubot" else parts  # gpubot/ is the package itself (pyproject.toml)
            if "migrations" not in parts:
                found[".".join(("gpubot", *parts)).removesuffix(".__init__")] = path
    return found


def _import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the modules of ours it imports (anywhere in it: TYPE_CHECKING blocks and functions too)."""
    graph = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names if alias.name in modules}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:  # `from package import module` names the module, else the package
                    full = f"{node.module}.{alias.name}"
                    targets |= {full} if full in modules else {node.module} & modules.keys()
        graph[name] = targets - {name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, targets = work[-1]
            step = next(targets, None)
            if step is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = stack[stack.index(node):]
                    del stack[stack.index(node):]
                    found += [sorted(group)] if len(group) > 1 else []
            elif step not in index:
                index[step] = low[step] = len(index)
                stack.append(step)
                work.append((step, iter(sorted(graph[step]))))
            elif step in stack:
                low[node] = min(low[node], index[step])
    return found


def test_circle_finder_finds_a_circle():
    """The finder itself: a → b → c → a is one circle, d hanging off it is not in it."""
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles():
    """Issue #26: no module imports itself back through others (engine.py ⇄ acquisition/breakers.py and
    bot/listeners/modal.py ⇄ bot/replies.py were the last two)."""
    circles = _circles(_import_graph(_our_modules()))
    assert not circles, f"import circles: {circles}"


_FINAL = {"RELEASED", "FAILED", "CANCELLED"}


def _state_changes_that_may_end(path: Path) -> list[str]:
    """Calls of db.bookings' `transition` (and `transition_returning`) whose target is not named as a state that
    cannot be final: those must go through `scheduling.delivery.move_booking`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("transition", "transition_returning") and len(node.args) >= 3:
            target = node.args[2]
            named = isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                and target.value.id == "BookingState"
            if not named or target.attr in _FINAL:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_a_booking_reaches_a_final_state_only_through_move_booking():
    """Whichever way a booking ends, what every end owes is owed (the booking it was to replace is drawn again, no
    longer being replaced): a seventh way to end cannot forget it, because a state change outside the outbox's
    `move_booking` may only name a state that is not final."""
    found = [hit for path in (ROOT / "scheduling").rglob("*.py") if "delivery" not in path.parts
             for hit in _state_changes_that_may_end(path)]
    assert not found, f"state changes that may end a booking outside move_booking: {found}"

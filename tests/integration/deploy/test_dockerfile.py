"""The Dockerfile, checked without a Docker engine: multi-stage, non-root, `gpubot serve` as entry point, a
health check that really probes /healthz, and build steps that name files and extras that exist."""

from __future__ import annotations

import http.server
import inspect
import json
import os
import subprocess
import sys
import threading
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
import typer

from gpubot import serving
from gpubot.cli import app
from gpubot.health import Health
from gpubot.runtime import Runtime
from gpubot.server import build_http_app

ROOT = Path(__file__).resolve().parents[3]


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined and comments dropped."""
    text = (ROOT / "deploy" / "Dockerfile").read_text()
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = "\n".join(lines).replace("\\\n", " ")
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in joined.splitlines() if line.strip()]


def _final_stage() -> list[tuple[str, str]]:
    steps = instructions()
    last_from = max(i for i, (op, _args) in enumerate(steps) if op == "FROM")
    return steps[last_from:]


def test_multi_stage_slim_images():
    froms = [args for op, args in instructions() if op == "FROM"]
    assert len(froms) >= 2 and all("slim" in f for f in froms)
    assert any(op == "COPY" and args.startswith("--from=builder") for op, args in _final_stage())


def test_runs_as_a_non_root_user():
    users = [args.strip() for op, args in _final_stage() if op == "USER"]
    assert users and users[-1] not in ("root", "0")


def test_entry_point_is_gpubot_serve_and_both_commands_exist():
    final = dict(_final_stage())
    command = json.loads(final["ENTRYPOINT"]) + json.loads(final["CMD"])
    assert command == ["gpubot", "serve"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["gpubot"] == "gpubot.cli:main"
    commands = typer.main.get_command(app).commands
    assert "serve" in commands and "upgrade" in commands["db"].commands


def test_serve_migrates_on_start():
    assert "self._migrate()" in inspect.getsource(Runtime.start_background)
    assert "self.wired.db.upgrade()" in inspect.getsource(Runtime._migrate)
    assert "runtime.start_background()" in inspect.getsource(serving._start_up)


def test_builder_copies_files_that_exist_and_installs_real_extras():
    builder = instructions()[:max(i for i, (op, _a) in enumerate(instructions()) if op == "FROM")]
    sources = [src for op, args in builder if op == "COPY" for src in args.split()[:-1]]
    assert sources and all((ROOT / src).exists() for src in sources), sources
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    install = next(args for op, args in builder if op == "RUN" and "pip install" in args)
    assert "[postgres,aws,gcp,charts]" in install and {"postgres", "aws", "gcp", "charts"} <= set(extras)


def _healthcheck_code() -> str:
    check = next(args for op, args in _final_stage() if op == "HEALTHCHECK")
    argv = json.loads(check[check.index("CMD") + 3:])
    assert argv[:2] == ["python", "-c"], "the slim image has python, not curl"
    return argv[2]


def test_the_probed_path_is_served():
    assert "/healthz'" in _healthcheck_code()
    wired = SimpleNamespace(db=SimpleNamespace(url="sqlite://"), engine=None,  # only the routes are read
                            settings=SimpleNamespace(metrics_port=None))
    routes = {route.path for route in build_http_app(wired, None, Health(None, lambda: True)).routes}  # type: ignore[arg-type]
    assert "/healthz" in routes


class _Health(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        self.send_response(self.status if self.path == "/healthz" else 404)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.mark.parametrize(("status", "healthy"), [(200, True), (503, False)])
def test_healthcheck_command_passes_on_200_and_fails_on_503(status, healthy):
    handler = type("Handler", (_Health,), {"status": status})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {**os.environ, "GPUBOT_PORT": str(server.server_address[1]), "NO_PROXY": "127.0.0.1"}
        result = subprocess.run([sys.executable, "-c", _healthcheck_code()], env=env, capture_output=True, timeout=30)
    finally:
        server.shutdown()
        server.server_close()
    assert (result.returncode == 0) is healthy, result.stderr.decode()

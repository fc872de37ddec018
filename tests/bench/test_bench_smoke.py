"""Every benchmark runs once at a tiny size so it cannot rot. Numbers are not checked against anything: speed
belongs to `make bench`, never to the test suite."""

from __future__ import annotations

import json
import math
import os
import re
import sys
from pathlib import Path

import pytest

from bench.__main__ import BENCHMARKS, main
from bench.figures import Figure
from tests.pty_kit import Terminal

pytestmark = pytest.mark.slow  # a long module: its xdist group is handed out first (tests/conftest.py)


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_each_benchmark_yields_positive_figures(name):
    figures = BENCHMARKS[name]("tiny")
    assert figures and all(isinstance(f, Figure) for f in figures)
    for f in figures:
        assert f.figure.startswith(name), f.figure
        assert f.unit in {"ms", "s", "MiB", "tx", "stmts"}
        assert f.ours > 0 and f.floor > 0 and math.isfinite(f.ratio), f
        assert f.target is None or f.target > 0


def test_the_runner_writes_the_table_as_json(tmp_path, capsys):
    out = tmp_path / "run.json"
    assert main(["--size", "tiny", "--only", "P2", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["size"] == "tiny" and data["machine"]["nproc"] >= 1 and data["machine"]["python"]
    rows = data["figures"]
    assert {"figure", "ours", "floor", "ratio", "target", "unit", "meets"} <= set(rows[0])
    assert all(row["figure"].startswith("P2") for row in rows)
    assert "| figure | ours | floor | ratio | target |" in capsys.readouterr().out


def test_an_unknown_figure_is_refused_with_the_known_ones(capsys):
    with pytest.raises(SystemExit):
        main(["--only", "P9"])
    assert "unknown figure P9; choose from P1, P2, P3, P4, P5, P6" in capsys.readouterr().err


def test_on_a_terminal_each_figure_shows_as_it_is_measured_under_a_progress_bar(tmp_path):
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    terminal = Terminal([sys.executable, "-m", "bench", "--size", "tiny", "--only", "P2,P3", "--out",
                         str(tmp_path / "run.json")], root, env, columns=160)
    try:
        shown = terminal.finish(timeout=240)
    finally:
        terminal.kill()
    assert terminal.process.returncode == 0, shown
    assert re.search(r"P2 \(tiny\) .*0/2", shown) and re.search(r"P3 \(tiny\) .*1/2", shown), shown
    assert "2/2" in shown
    first_row = shown.index("| P2")
    assert first_row < shown.index("P3 (tiny)")  # P2's row was printed before P3 started
    assert re.search(r"\(P2: \d+ s\)", shown)

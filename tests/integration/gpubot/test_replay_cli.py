"""`gpubot replay` as a real process: a generated trace in, a table, JSON and a PNG chart out."""

from __future__ import annotations

import csv
import json
import os
import random
import re
import sys
from decimal import Decimal
from pathlib import Path

from tests.cli_kit import gpubot
from tests.pty_kit import Terminal

CONFIG = """
[team]
currency = "USD"
[providers.dear]
kind = "simulated"
stock = [{ gpu = "v100", region = "d-1", count = 32, price = 2.5 }]
[providers.cheap]
kind = "simulated"
stock = [{ gpu = "v100", region = "c-1", count = 16, price = 1.5, spot_price = 0.7 }]
[providers.pool]
kind = "pool"
machines = [{ host = "m1", gpu = "v100", gpus = 8, monthly_cost = 2000 }]
[replay]
start = "2026-05-04T00:00:00Z"
baseline_provider = "dear"
gpu_types = { "12GB" = "v100" }
"""


def _write_trace(directory) -> None:
    rng = random.Random(4)
    with (directory / "jobs.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["job_id", "submit_time_s", "gpus", "gpu_type", "duration_s", "user", "vc"])
        for i in range(12):
            writer.writerow([f"j{i}", rng.randrange(0, 20_000), rng.choice([2, 4, 8]), "12GB",
                             rng.randrange(900, 20_000), f"u{i % 3}", "vc1"])
    with (directory / "util.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["job_id", "t_s", "gpu_util"])
        for minute in range(30):
            writer.writerow(["j1", 600 + 60 * minute, 3 if minute > 5 else 90])


def test_replay_prints_the_policies_side_by_side_and_writes_json_and_png(tmp_path):
    _write_trace(tmp_path)
    (tmp_path / "replay.toml").write_text(CONFIG)
    done = gpubot("replay", "--trace", "jobs.csv", "--util", "util.csv", "--config", "replay.toml",
                  "--out", "out", "--seed", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = [line.split()[0] for line in done.stdout.splitlines()[2:9]]
    assert rows == ["baseline", "cheapest-first", "idle-reclaim", "no-process-reclaim", "pool", "spot", "wait-cheaper"]
    report = json.loads((tmp_path / "out" / "replay.json").read_text())
    assert report["meta"]["seed"] == 3 and report["meta"]["jobs"] == 12
    assert [p["policy"] for p in report["policies"]] == rows
    assert set(report["policies"][0]["spend_by_provider"]) == {"dear"}
    assert (tmp_path / "out" / "replay.png").read_bytes().startswith(b"\x89PNG")


def test_one_policy_can_be_chosen(tmp_path):
    _write_trace(tmp_path)
    (tmp_path / "replay.toml").write_text(CONFIG)
    done = gpubot("replay", "--trace", "jobs.csv", "--config", "replay.toml", "--policy", "pool",
                  "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [p["policy"] for p in json.loads((tmp_path / "out" / "replay.json").read_text())["policies"]] == ["pool"]


def test_bad_input_is_named_and_nothing_is_written(tmp_path):
    (tmp_path / "jobs.csv").write_text("submit_time_s,gpus,gpu_type,duration_s\n0,two,v100,60\n")
    (tmp_path / "replay.toml").write_text(CONFIG)
    done = gpubot("replay", "--trace", "jobs.csv", "--config", "replay.toml", "--out", "out", cwd=tmp_path)
    assert done.returncode == 2
    assert "error: --trace: line 2: gpus must be a number, got 'two'" in done.stderr
    unknown = gpubot("replay", "--trace", "jobs.csv", "--config", "replay.toml", "--policy", "magic",
                     cwd=tmp_path)
    assert unknown.returncode == 2 and "--policy: got 'magic', expected one of baseline" in unknown.stderr
    assert not (tmp_path / "out").exists()


def test_on_a_terminal_each_policy_shows_a_progress_bar_and_piped_output_stays_plain(tmp_path):
    _write_trace(tmp_path)
    (tmp_path / "replay.toml").write_text(CONFIG)
    args = ["replay", "--trace", "jobs.csv", "--config", "replay.toml", "--policy", "baseline", "--policy", "pool",
            "--out", "out"]
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    terminal = Terminal([sys.executable, "-m", "gpubot", *args], tmp_path, env)
    try:
        shown = terminal.finish(timeout=120)
    finally:
        terminal.kill()
    assert terminal.process.returncode == 0, shown
    for policy in ("baseline", "pool"):
        assert re.search(rf"{policy} .*12/12 .*jobs/s", shown), shown  # bar, done/total, rate, then time left
    assert "left" in shown
    piped = gpubot(*args, cwd=tmp_path, env={"CI": ""})
    assert "jobs/s" not in piped.stderr and "\x1b[" not in piped.stderr + piped.stdout
    assert "baseline: replayed 12 jobs" in piped.stderr


def test_a_trace_whose_gpu_types_nothing_sells_is_refused_with_the_line_that_fixes_it(tmp_path):
    _write_trace(tmp_path)
    (tmp_path / "replay.toml").write_text(CONFIG.replace('gpu_types = { "12GB" = "v100" }', ""))
    done = gpubot("replay", "--trace", "jobs.csv", "--config", "replay.toml", "--out", "out", cwd=tmp_path)
    assert done.returncode == 2 and not (tmp_path / "out").exists()
    assert "no cloud in this replay sells the trace's GPU type 12GB (12 jobs)" in done.stderr
    assert '  [replay]\n  gpu_types = { "12GB" = "v100" }' in done.stderr
    builtin = gpubot("replay", "--trace", "jobs.csv", cwd=tmp_path)  # the built-in simulated cloud sells no V100
    assert builtin.returncode == 2 and 'gpu_types = { "12GB" = "rtx4090" }' in builtin.stderr


def test_replay_help_names_its_replay_table(tmp_path):
    assert "Policy file with a [replay] table" in gpubot("replay", "--help", cwd=tmp_path).stdout


def test_without_the_replay_extra_it_says_what_to_install(tmp_path, monkeypatch):
    _write_trace(tmp_path)
    (tmp_path / "replay.toml").write_text(CONFIG)
    for module in ("scipy", "scipy.optimize"):
        monkeypatch.setitem(sys.modules, module, None)  # as if scipy were not installed
    done = gpubot("replay", "--trace", "jobs.csv", "--config", "replay.toml", "--out", "out", cwd=tmp_path)
    assert done.returncode == 2 and not (tmp_path / "out").exists()
    assert "pip install '.[replay]' (in gpubot's checkout)" in done.stderr and "scipy" in done.stderr


SAMPLE = Path(__file__).resolve().parents[3] / "bench" / "data" / "philly-sample"
PHILLY_CONFIG = Path(__file__).resolve().parents[3] / "bench" / "replay-philly.toml"


def test_the_philly_sample_reports_its_assumptions_and_each_policys_bound(tmp_path):
    done = gpubot("replay", "--trace", str(SAMPLE / "jobs.csv"), "--util", str(SAMPLE / "util.csv"),
                  "--config", str(PHILLY_CONFIG), "--policy", "idle-reclaim", "--policy", "no-process-reclaim",
                  "--out", "out", cwd=tmp_path, env={"CI": "1"})
    assert done.returncode == 0, done.stderr
    assert ("assumed: 33 of 60 jobs (55 %) have measured utilisation; 27 got idle stretches drawn from them; "
            "0 counted busy") in done.stdout
    assert "assumed: 0 fractional-GPU requests rounded up" in done.stdout
    assert "assumed: 1 job ran longer than booking.max_duration" in done.stdout
    assert re.search(r"bound: no-process-reclaim: [0-9,.]+ \(exact linear program, solved in", done.stdout)
    report = json.loads((tmp_path / "out" / "replay.json").read_text())
    util_rule, no_process = report["policies"]
    assert Decimal(no_process["idle_gpu_hours"]) < Decimal(util_rule["idle_gpu_hours"])  # 15 min after the end, not 40
    for row in (util_rule, no_process):
        assert Decimal(row["lower_bound"]) <= Decimal(row["spend"]) and row["bound_method"] == "exact"
    assert report["meta"]["assumptions"]["measured"] == 33


def test_another_traces_columns_iso_times_and_gpu_shares_are_read_and_said(tmp_path):
    (tmp_path / "pods.csv").write_text(
        "name,creation_time,runtime,num_gpu,gpu_spec\n"
        "p1,2023-05-01T10:00:00Z,5400,0.5,12GB\n"
        "p2,2023-05-01T09:00:00Z,3600,2,12GB\n")
    (tmp_path / "replay.toml").write_text(CONFIG)
    done = gpubot("replay", "--trace", "pods.csv", "--config", "replay.toml", "--policy", "baseline",
                  "--columns", "submit=creation_time,duration=runtime,gpus=num_gpu,gpu_type=gpu_spec,job=name",
                  "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "assumed: 1 fractional-GPU requests rounded up to whole GPUs (+0.8 GPU-h of work)" in done.stdout
    assert "0 of 2 jobs (0 %) have measured utilisation; 0 got idle stretches drawn from them; 2 counted busy" \
        in done.stdout
    bad = gpubot("replay", "--trace", "pods.csv", "--config", "replay.toml", "--columns", "submit=created",
                 cwd=tmp_path)
    assert bad.returncode == 2 and "error: --trace: --columns: the trace has no column created" in bad.stderr


def _ledger_month(url: str) -> None:
    """November 2026 of a team: 20 bookings of 2 or 4 V100s, each busy for a while, then idle until released."""
    from datetime import UTC, datetime, timedelta

    from gpubot.db import bookings as repo
    from gpubot.db import telemetry
    from gpubot.db.database import Database
    from gpubot.domain.model import Booking, BookingState
    from gpubot.domain.ports import GpuReading

    db = Database(url)
    start, rng = datetime(2026, 11, 2, tzinfo=UTC), random.Random(8)
    try:
        with db.session() as session:
            for i in range(20):
                asked = start + timedelta(hours=30 * i + rng.randrange(0, 5))
                busy, idle = timedelta(minutes=rng.randrange(30, 300)), timedelta(minutes=rng.randrange(15, 120))
                count = rng.choice([2, 4])
                booking = repo.add_booking(Booking(
                    0, f"u{i % 3}", "v100", count, timedelta(hours=8), BookingState.RELEASED, asked,
                    provider="dear", price_per_gpu_hour=Decimal("2.5"), currency="USD", started_at=asked,
                    ends_at=asked + timedelta(hours=8), released_at=asked + busy + idle), session=session)
                minutes = int((busy + idle).total_seconds()) // 60
                telemetry.add_readings([(booking.id, GpuReading(g, 90.0 if m * 60 < busy.total_seconds() else 1.0,
                                                                 50.0), asked + timedelta(minutes=m))
                                        for m in range(0, minutes, 5) for g in range(count)], session=session)
    finally:
        db.dispose()


def test_the_teams_own_month_replays_from_its_ledger_without_writing_to_it(tmp_path, database_url):
    _ledger_month(database_url)
    (tmp_path / "replay.toml").write_text(CONFIG)
    done = gpubot("replay", "--from-ledger", "--database", database_url, "--since", "2026-11-01",
                  "--until", "2026-12-01", "--config", "replay.toml", "--policy", "baseline",
                  "--policy", "no-process-reclaim", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "assumed: 20 of 20 jobs (100 %) have measured utilisation" in done.stdout
    report = json.loads((tmp_path / "out" / "replay.json").read_text())
    assert report["meta"]["trace"] == "ledger" and report["meta"]["jobs"] == 20
    baseline, finished = report["policies"]
    assert Decimal(finished["idle_gpu_hours"]) < Decimal(baseline["idle_gpu_hours"])
    assert Decimal(finished["spend"]) < Decimal(baseline["spend"])
    empty = gpubot("replay", "--from-ledger", "--database", database_url, "--since", "2025-01-01",
                   "--until", "2025-02-01", "--config", "replay.toml", cwd=tmp_path)
    assert empty.returncode == 2 and "no booking asked for between 2025-01-01 00:00 and 2025-02-01 00:00" \
        in empty.stderr


def test_from_ledger_never_creates_a_database(tmp_path):
    (tmp_path / "replay.toml").write_text(CONFIG)
    done = gpubot("replay", "--from-ledger", "--database", "missing.db", "--config", "replay.toml", cwd=tmp_path)
    assert done.returncode == 2 and "no database at missing.db" in done.stderr
    assert not (tmp_path / "missing.db").exists() and not (tmp_path / "out").exists()
    both = gpubot("replay", "--from-ledger", "--trace", "jobs.csv", cwd=tmp_path)
    assert both.returncode == 2 and "give either --trace FILE or --from-ledger" in both.stderr
    bad = gpubot("replay", "--from-ledger", "--database", "missing.db", "--since", "last week", cwd=tmp_path)
    assert bad.returncode == 2 and "--since: expected a date such as 2026-11-01" in bad.stderr

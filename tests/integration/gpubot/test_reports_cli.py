"""`gpubot report cost`, `gpubot export ledger` and `gpubot digest`, run as real processes on a seeded ledger."""

from __future__ import annotations

import csv
import io
import json
import re
import tomllib
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from gpubot.providers.registry import policy_from_dict
from gpubot.scheduling.acquisition.queue import start_now
from gpubot.scheduling.booking.booking import BookingAsk, book, release

from gpubot.sandbox.slack_api import FakeSlackApi
from tests.cli_kit import gpubot
from tests.conftest import Clock
from tests.engine_kit import make_engine

CONFIG = """
[team]
admins = ["UADMIN"]
digest_channel = "CDIGEST"

[providers.a]
kind = "simulated"
stock = [{ gpu = "a100", region = "a-1", count = 8, price = 1.50 }]

[providers.b]
kind = "simulated"
currency = "CNY"
stock = [{ gpu = "a100", region = "b-1", count = 8, price = 10 }]

[fx]
CNY = 0.14
"""


@pytest.fixture
def seeded(tmp_path) -> dict:
    """A ledger with two finished bookings on 2026-11-02 and the environment pointing at it."""
    (tmp_path / "gpubot.toml").write_text(CONFIG)
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    clock = Clock(datetime(2026, 11, 2, 10, 0, tzinfo=UTC))
    engine = make_engine(url, policy_from_dict(tomllib.loads(CONFIG)), clock)
    for owner, provider, count, hours in (("UALICE", "a", 4, 2), ("UBOB", "b", 2, 3)):
        booked = book(engine, BookingAsk(owner=owner, gpu="a100", count=count, duration=timedelta(hours=8),
                                         provider=provider))
        running = start_now(engine, booked.booking)
        clock.advance(hours=hours)
        release(engine, running.id, owner)
    engine.db.dispose()
    return {"DATABASE_URL": url, "GPUBOT_CONFIG": str(tmp_path / "gpubot.toml")}


def test_report_cost_as_json_csv_and_table(seeded, tmp_path):
    args = ("report", "cost", "--since", "2026-11-02", "--until", "2026-11-02", "--by", "user")
    report = json.loads(gpubot(*args, "--format", "json", cwd=tmp_path, env=seeded).stdout)
    # UALICE 4 × 2 h × $1.50 = $12.00; UBOB 2 × 3 h × ¥10 × 0.14 = $8.40
    assert {r["name"]: r["spend"] for r in report["rows"]} == {"UALICE": "12.00", "UBOB": "8.40"}
    assert report["total"] == {"name": "total", "spend": "20.40", "gpu_hours": "14.0", "idle_gpu_hours": "0.0",
                               "idle_waste": "0.00"}
    rows = list(csv.reader(io.StringIO(gpubot(*args, "--format", "csv", cwd=tmp_path, env=seeded).stdout)))
    assert rows[0][:2] == ["user", "spend"] and rows[-1][:2] == ["total", "20.40"]
    table = gpubot(*args, cwd=tmp_path, env=seeded).stdout
    assert "$12.00" in table and "$20.40" in table
    bad = gpubot("report", "cost", "--since", "yesterday-ish", cwd=tmp_path, env=seeded)
    assert bad.returncode == 2 and "expected YYYY-MM" in bad.stderr


def test_export_ledger_has_every_interval_with_its_cost(seeded, tmp_path):
    out = gpubot("export", "ledger", "--format", "csv", cwd=tmp_path, env=seeded).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["owner"] for r in rows] == ["UALICE", "UBOB"]
    assert rows[1]["currency"] == "CNY" and Decimal(rows[1]["cost"]) == Decimal(60)
    assert sum(Decimal(r["cost_team"]) for r in rows) == Decimal("20.40")


def test_digest_prints_and_posts_once_with_its_chart(seeded, tmp_path):
    printed = gpubot("digest", "--date", "2026-11-02", cwd=tmp_path, env=seeded).stdout
    assert "Digest for 2026-11-02" in printed and "$20.40 spent" in printed
    assert not any(mark in printed for mark in ("*", "```", "<@", "📊"))  # plain text, no Slack markup
    api = FakeSlackApi()
    env = {**seeded, "SLACK_API_URL": api.start(), "SLACK_BOT_TOKEN": "xoxb-test"}
    try:
        first = gpubot("digest", "--date", "2026-11-02", "--post", cwd=tmp_path, env=env)
        again = gpubot("digest", "--date", "2026-11-02", "--post", cwd=tmp_path, env=env)
    finally:
        api.stop()
    assert "posted to CDIGEST" in first.stdout and "already posted" in again.stdout
    assert [c.args["channel"] for c in api.calls_to("chat.postMessage")] == ["CDIGEST"]
    (upload,) = api.calls_to("file_upload")
    assert upload.args["_data"].startswith(b"\x89PNG\r\n\x1a\n")
    (done,) = api.calls_to("files.completeUploadExternal")
    assert done.args["channel_id"] == "CDIGEST" and "Daily spend" in done.args["initial_comment"]
    assert json.loads(done.args["files"])[0]["id"] == upload.args["_file_id"]
    (posted,) = api.calls_to("chat.postMessage")
    sections = [block["text"]["text"] for block in posted.args["blocks"]]
    assert len(sections) >= 4  # summary, month, one per table: each its own section
    assert all("\n\n" not in text and text.count("```") % 2 == 0 for text in sections)  # no blank gaps


def test_every_report_takes_database_instead_of_the_environment(seeded, tmp_path):
    env = {"GPUBOT_CONFIG": seeded["GPUBOT_CONFIG"], "DATABASE_URL": f"sqlite:///{tmp_path / 'empty.db'}"}
    ledger = seeded["DATABASE_URL"].removeprefix("sqlite:///")
    for database in (seeded["DATABASE_URL"], ledger):  # a URL, or a bare SQLite file name
        report = gpubot("report", "cost", "--since", "2026-11-02", "--until", "2026-11-02", "--format", "json",
                        "--database", database, cwd=tmp_path, env=env)
        assert json.loads(report.stdout)["total"]["spend"] == "20.40", report.stderr
    export = gpubot("export", "ledger", "--database", ledger, cwd=tmp_path, env=env).stdout
    assert len(list(csv.DictReader(io.StringIO(export)))) == 2
    digest = gpubot("digest", "--date", "2026-11-02", "--database", ledger, cwd=tmp_path, env=env).stdout
    assert "$20.40 spent" in digest
    missing = gpubot("digest", "--date", "2026-11-02", cwd=tmp_path, env=env)  # DATABASE_URL: no such file
    assert missing.returncode == 2 and "empty.db does not exist" in missing.stderr
    assert not (tmp_path / "empty.db").exists()


def test_digest_writes_its_chart_with_png(seeded, tmp_path):
    out = tmp_path / "charts" / "spend.png"
    out.parent.mkdir()
    result = gpubot("digest", "--date", "2026-11-02", "--png", str(out), cwd=tmp_path, env=seeded)
    assert result.returncode == 0 and f"chart written to {out}" in result.stdout
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    bad = gpubot("digest", "--date", "2026-11-02", "--png", str(tmp_path / "missing" / "x.png"), cwd=tmp_path,
                 env=seeded)
    assert bad.returncode == 2 and "cannot write" in bad.stderr


FORMULAS = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1)", "\tTAB"]  # and \\r (text capture turns it to \\n)


def test_csv_exports_neutralise_formulas_and_write_money_to_the_cent(tmp_path):
    (tmp_path / "gpubot.toml").write_text(CONFIG)
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    clock = Clock(datetime(2026, 11, 2, 10, 0, tzinfo=UTC))
    engine = make_engine(url, policy_from_dict(tomllib.loads(CONFIG)), clock)
    for project in FORMULAS:
        booked = book(engine, BookingAsk(owner="UEVE", gpu="a100", count=1, duration=timedelta(hours=8),
                                         provider="b", project=project))
        running = start_now(engine, booked.booking)
        clock.advance(minutes=7, seconds=13)  # ¥10/h × 0.14 over 433 s: far more than two decimals exactly
        release(engine, running.id, "UEVE")
    engine.db.dispose()
    env = {"DATABASE_URL": url, "GPUBOT_CONFIG": str(tmp_path / "gpubot.toml")}

    ledger = list(csv.DictReader(io.StringIO(gpubot("export", "ledger", "--format", "csv", cwd=tmp_path,
                                                    env=env).stdout)))
    report = list(csv.reader(io.StringIO(gpubot("report", "cost", "--since", "2026-11-02", "--until", "2026-11-02",
                                                "--by", "project", "--format", "csv", cwd=tmp_path, env=env).stdout)))
    assert sorted(r["project"] for r in ledger) == sorted(f"'{p}" for p in FORMULAS)
    assert sorted(row[0] for row in report[1:-1]) == sorted(f"'{p}" for p in FORMULAS)
    money = [r[k] for r in ledger for k in ("cost", "cost_team")] + [row[1] for row in report[1:]]
    assert all(len(amount.partition(".")[2]) == 2 for amount in money), money
    assert Decimal(ledger[0]["cost_team"]) == Decimal("0.17")  # 433/3600 h × ¥10 × 0.14 = 0.1684…


def _spent(digest: str) -> str:
    return re.search(r"\$([0-9,.]+) spent", digest).group(1)


def test_the_digest_of_a_day_equals_report_cost_and_lists_only_that_days_bookings(database_url, tmp_path):
    (tmp_path / "gpubot.toml").write_text(CONFIG)
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    day = today - timedelta(days=1)
    clock = Clock(day + timedelta(hours=9, minutes=3, seconds=17))
    engine = make_engine(database_url, policy_from_dict(tomllib.loads(CONFIG)), clock)
    finished = book(engine, BookingAsk(owner="UALICE", gpu="a100", count=3, duration=timedelta(hours=8),
                                       provider="b"))
    running = start_now(engine, finished.booking)
    clock.advance(hours=2, minutes=7, seconds=41)  # ¥10/h × 0.14 over odd seconds
    release(engine, running.id, "UALICE")
    clock.current = day + timedelta(hours=20, seconds=11)  # runs across midnight, never accrued: the ledger lags
    start_now(engine, book(engine, BookingAsk(owner="UBOB", gpu="a100", count=2, duration=timedelta(hours=30),
                                              provider="a")).booking)
    clock.current = today + timedelta(seconds=1)  # asked for the next day: not that day's
    start_now(engine, book(engine, BookingAsk(owner="UCAROL", gpu="a100", count=1, duration=timedelta(hours=8),
                                              provider="a")).booking)
    engine.db.dispose()
    env = {"DATABASE_URL": database_url, "GPUBOT_CONFIG": str(tmp_path / "gpubot.toml")}
    date_ = f"{day:%Y-%m-%d}"
    report = json.loads(gpubot("report", "cost", "--since", date_, "--until", date_, "--format", "json",
                               cwd=tmp_path, env=env).stdout)
    digest = gpubot("digest", "--date", date_, cwd=tmp_path, env=env).stdout
    # UALICE 3 × 2h07m41s × ¥10 × 0.14 + UBOB 2 × 3h59m49s × $1.50, to the cent in both
    assert report["total"]["spend"] == "20.93" and _spent(digest) == "20.93", digest
    assert "UBOB" in digest and "UCAROL" not in digest


def test_a_day_with_no_activity_is_one_line_without_a_chart(seeded, tmp_path):
    ran = gpubot("digest", "--date", "2026-11-05", "--png", "chart.png", cwd=tmp_path, env=seeded)
    assert ran.returncode == 0 and ran.stdout.strip() == "Digest for 2026-11-05: no activity.", ran.stdout
    assert not (tmp_path / "chart.png").exists()

"""The web sandbox (`gpubot demo --web`) in headless Chromium: type a booking, see it land on the simulated cloud in
one message updated in place, click Release, see the message change; then the DM and the App Home; book through
the modal `/gpu book` opens (a form: picks, validation errors on the fields, Submit through the real app).

Chromium is Debian's (`apt-get install chromium`; .ci/run installs it), driven by Playwright for Python with
`executable_path` — Playwright's own browser downloads are never used. A screenshot is saved as
test-artifacts/sandbox.png.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.server_kit import free_port

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic", "--no-proxy-server"]
WAIT_MS = 30_000  # the longest any one step may take before the test fails

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed: apt-get install -y chromium "
                                                         "(.ci/run does this)")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: pip install -e '.[dev]'")
expect = sync_api.expect


def _wait_up(url: str, process: subprocess.Popen, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gpubot demo --web exited: {log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/sandbox/state", timeout=1, trust_env=False).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the sandbox never answered: {log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def sandbox_url(tmp_path_factory):
    """`gpubot demo --web` as a subprocess, on a free port, with its own ledger."""
    tmp = tmp_path_factory.mktemp("sandbox")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "GPUBOT_", "DATABASE_URL"))}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    log = tmp / "sandbox.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "gpubot", "demo", "--web", "--port", str(port),
         "--database", f"sqlite:///{tmp / 'sandbox.db'}"],
        cwd=tmp, env=env, stdin=subprocess.DEVNULL, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_up(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="module")
def page():
    """A headless Chromium page."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        yield context.new_page()
        browser.close()


def test_book_land_and_release_in_the_browser(sandbox_url, page):
    page.goto(sandbox_url)
    expect(page.locator("#title")).to_have_text("#gpu", timeout=WAIT_MS)
    page.locator("#composer").fill("/gpu book a100x4 6h")
    page.locator("#composer").press("Enter")

    mine = page.locator('.message[data-kind="user"]', has_text="/gpu book a100x4 6h")  # the other tests type too
    expect(mine).to_have_count(1, timeout=WAIT_MS)
    booking = page.locator('.message[data-kind="message"]', has_text="A100 40GB")
    expect(booking).to_contain_text("active on simulated", timeout=WAIT_MS)
    expect(booking).to_have_count(1)  # the request was updated in place, not posted again
    expect(booking.locator(".block.context code")).to_contain_text("ssh ")
    expect(booking.locator("b").first).to_have_text(re.compile(r"^#\d+$"))  # mrkdwn *#N* rendered bold (the other
    # tests of the module, in any order, may have booked before)
    ts = booking.get_attribute("data-ts")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "sandbox-active.png"), full_page=True)

    booking.get_by_role("button", name="Release").click()
    same = page.locator(f'.message[data-ts="{ts}"]')
    expect(same).to_contain_text("released on simulated", timeout=WAIT_MS)
    expect(same.get_by_role("button", name="Release")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "sandbox.png"), full_page=True)

    page.locator("#dms a[data-view]").first.click()
    expect(page.locator("#title")).to_have_text("gpubot (DM)")
    expect(page.locator("#feed")).to_contain_text("is ready", timeout=WAIT_MS)
    # How to connect and that telemetry is coming; the agent's line comes only if none does (telemetry_stale_after)
    ready = page.locator("#feed .message", has_text="is ready").first
    expect(ready).to_contain_text("GPU telemetry (for idle and temperature checks) is on its way")
    expect(ready).not_to_contain_text("sha256sum")
    expect(page.locator("#feed")).to_contain_text("released", timeout=WAIT_MS)
    page.locator("#home-link").click()
    expect(page.locator("#home .block.header").first).to_have_text("Your GPU bookings", timeout=WAIT_MS)
    expect(page.locator("#home")).to_contain_text("Spend this month")


def test_release_from_the_home_tab(sandbox_url, page):
    """Home's buttons are sent as Slack sends a click on the Home view, through the real app: the booking is
    released, the DM says so, and Home is published again without its Release button."""
    page.goto(sandbox_url)
    expect(page.locator("#title")).to_have_text("#gpu", timeout=WAIT_MS)
    page.locator("#composer").fill("/gpu book h100x1 1h")
    page.locator("#composer").press("Enter")
    booking = page.locator('.message[data-kind="message"]', has_text="H100")
    expect(booking.last).to_contain_text("active on simulated", timeout=WAIT_MS)
    label = booking.last.locator("b").first.inner_text()
    page.locator("#home-link").click()
    row = page.locator("#home .block.section", has_text=f"{label} 1× H100")
    expect(row).to_contain_text("active", timeout=WAIT_MS)
    row.locator("xpath=following-sibling::div[1]").get_by_role("button", name="Release").click()
    ended = page.locator("#home .block.section", has_text=f"{label} 1× H100")
    expect(ended).to_contain_text("released", timeout=WAIT_MS)
    expect(ended.locator("xpath=following-sibling::div[1][contains(@class, 'actions')]")).to_have_count(0)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "sandbox-home.png"), full_page=True)
    page.locator("#dms a[data-view]").first.click()
    expect(page.locator("#feed")).to_contain_text(f"{label} released", timeout=WAIT_MS)


def test_book_through_the_modal_with_errors_shown_on_the_fields(sandbox_url, page):
    """`/gpu book` alone opens the bot's modal as a form; a pick refreshes its quote (block_actions on the view),
    a bad length comes back as `response_action: errors` on its field, and a good one books and closes it."""
    page.goto(sandbox_url)
    expect(page.locator("#title")).to_have_text("#gpu", timeout=WAIT_MS)
    page.locator("#composer").fill("/gpu book")
    page.locator("#composer").press("Enter")
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible(timeout=WAIT_MS)
    expect(dialog.locator("#modal-title")).to_have_text("Book GPUs")
    expect(dialog).to_contain_text("1× A100 40GB: $1.99/GPU-h on simulated", timeout=WAIT_MS)  # the first quote

    dialog.get_by_label("GPU type").select_option("h100")
    expect(dialog).to_contain_text("1× H100 80GB: $3.99/GPU-h on simulated", timeout=WAIT_MS)  # the pick's quote
    dialog.get_by_label("How many").select_option("2")
    expect(dialog).to_contain_text("2× H100 80GB: $3.99/GPU-h on simulated", timeout=WAIT_MS)
    expect(dialog.get_by_label("GPU type")).to_have_value("h100")  # kept when the bot updates the view
    dialog.get_by_label("Duration").fill("4 h")
    dialog.get_by_label("Project").fill("modal-test")
    dialog.get_by_role("button", name="Book").click()
    error = dialog.locator('.modal-field[data-block-id="duration"] .field-error')
    expect(error).to_have_text("Enter one length, such as 4h, 90m or 1d.", timeout=WAIT_MS)
    expect(dialog.get_by_label("Project")).to_have_value("modal-test")  # nothing typed is lost
    page.screenshot(path=str(_artifacts() / "sandbox-modal-errors.png"), full_page=True)

    dialog.get_by_label("Duration").fill("90m")
    dialog.get_by_role("button", name="Book").click()
    expect(dialog).to_have_count(0, timeout=WAIT_MS)  # accepted: the modal closes, as in Slack
    page.locator("#dms a[data-view]").first.click()
    booked = page.locator('.message[data-kind="message"]', has_text="modal-test")
    expect(booked).to_contain_text("2× H100 80GB", timeout=WAIT_MS)
    expect(booked).to_contain_text("active on simulated", timeout=WAIT_MS)
    page.screenshot(path=str(_artifacts() / "sandbox-modal-booked.png"), full_page=True)


def test_a_closed_modal_is_gone_and_the_api_refuses_a_submission_of_it(sandbox_url, page):
    page.goto(sandbox_url)
    expect(page.locator("#title")).to_have_text("#gpu", timeout=WAIT_MS)
    page.locator("#composer").fill("/gpu book")
    page.locator("#composer").press("Enter")
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible(timeout=WAIT_MS)
    view_id = dialog.get_attribute("data-view-id")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_have_count(0)
    client = httpx.Client(base_url=sandbox_url, trust_env=False, timeout=10)
    assert client.get("/sandbox/state").json()["modal"] is None
    late = client.post("/sandbox/view/submit", json={"view_id": view_id, "values": {}})
    assert late.status_code == 409 and late.json()["error"] == "That form is no longer open"


def _artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


def test_a_line_that_is_not_a_command_is_refused_on_the_page(sandbox_url, page):
    page.goto(sandbox_url)
    expect(page.locator("#title")).to_have_text("#gpu", timeout=WAIT_MS)
    user_lines = page.locator('.message[data-kind="user"]')
    before = user_lines.count()
    page.locator("#composer").fill("book a100x4 6h")
    page.locator("#composer").press("Enter")
    expect(page.locator("#composer-error")).to_have_text("Commands start with /gpu — try /gpu help")
    expect(user_lines).to_have_count(before)


def test_help_is_shown_only_to_the_user(sandbox_url, page):
    page.goto(sandbox_url)
    page.locator("#composer").fill("/gpu help")
    page.locator("#composer").press("Enter")
    help_reply = page.locator(".message.ephemeral", has_text="/gpu book")
    expect(help_reply.last).to_contain_text("Only visible to you", timeout=WAIT_MS)


def test_the_json_api_refuses_bad_requests_clearly(sandbox_url):
    client = httpx.Client(base_url=sandbox_url, trust_env=False, timeout=10)
    refused = client.post("/sandbox/command", json={"text": "status"})
    assert refused.status_code == 400 and refused.json()["error"] == "Commands start with /gpu — try /gpu help"
    no_action = client.post("/sandbox/click", json={"channel": "CGPU", "ts": "1.000001"})
    assert no_action.status_code == 400 and no_action.json()["error"] == "action_id is required"
    assert client.get("/sandbox/files/FNOPE").status_code == 404
    assert "renderBlocks" in client.get("/static/app.js").text

"""The README is a front page: it fits on a screen, shows the sandbox, and every page it links to exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_BYTES = 15 * 1024


def test_the_readme_is_at_most_15_kb() -> None:
    assert README.stat().st_size <= MAX_BYTES, f"README.md is {README.stat().st_size} bytes; move detail to docs/"


def test_the_readme_shows_the_two_commands_and_a_screenshot() -> None:
    text = README.read_text(encoding="utf-8")
    assert "make demo" in text and "make test" in text
    assert re.search(r"!\[[^\]]+\]\(docs/img/sandbox\.png\)", text)


def test_every_local_link_in_the_readme_exists() -> None:
    links = re.findall(r"\]\(([^)#]+)\)", README.read_text(encoding="utf-8"))
    local = [link for link in links if not link.startswith(("http://", "https://"))]
    assert len(local) >= 10
    assert [link for link in local if not (ROOT / link).exists()] == []

"""Oversized and slow bodies (issue #20) against `gpubot serve` over a real socket, unauthenticated: refused
by Content-Length before reading, capped when chunked, cut off when dripped; the process memory stays flat."""

from __future__ import annotations

import select
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from gpubot.bodies import BODY_DEADLINE_SECONDS, MAX_BODY
from tests.e2e.server_kit import RunningBot, serving
from tests.reliability.figures import record

CONFIG = """
[providers.sim]
kind = "simulated"
stock = [{ gpu = "a100", region = "sim-1", count = 8, price = 2.0 }]
"""
HUGE = 200 * 1024 * 1024
CHUNK = b"a" * 65536
ENDPOINTS = ["/slack/events", "/api/telemetry"]


@pytest.fixture(scope="module")
def bot(tmp_path_factory) -> RunningBot:
    with serving(tmp_path_factory.mktemp("bodies"), CONFIG) as running:
        yield running


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _connect(bot: RunningBot) -> socket.socket:
    parts = urlsplit(bot.url)
    return socket.create_connection((parts.hostname, parts.port), timeout=30)


def _stream(conn: socket.socket, head: bytes, pieces) -> tuple[bytes, int]:
    """Send `head`, then each piece until the server answers; returns (the answer, body bytes sent)."""
    conn.sendall(head)
    sent = 0
    for piece in pieces:
        if select.select([conn], [], [], 0)[0]:
            break
        try:
            conn.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            break
        sent += len(piece)
    select.select([conn], [], [], 30)
    return _read_all(conn), sent


def _read_all(conn: socket.socket) -> bytes:
    answer = b""
    try:
        while chunk := conn.recv(65536):
            answer += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return answer


def _head(path: str, framing: str) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            f"{framing}\r\n\r\n").encode()


@pytest.mark.parametrize("path", ENDPOINTS)
def test_a_declared_200_mb_body_is_refused_before_it_is_read(bot, path):
    before = _rss_kib(bot.process.pid)
    with _connect(bot) as conn:
        answer, sent = _stream(conn, _head(path, f"Content-Length: {HUGE}"), (CHUNK for _ in range(HUGE // 65536)))
    growth = _rss_kib(bot.process.pid) - before
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert growth < 10 * 1024
    record("bodies", f"{path}: Content-Length 200 MB unauthenticated → 413 after {sent / 1e6:.1f} MB sent; "
                     f"RSS growth {growth / 1024:.1f} MB")


@pytest.mark.parametrize("path", ENDPOINTS)
def test_a_chunked_200_mb_body_is_cut_at_the_limit(bot, path):
    before = _rss_kib(bot.process.pid)
    framed = b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK)
    with _connect(bot) as conn:
        answer, sent = _stream(conn, _head(path, "Transfer-Encoding: chunked"),
                               (framed for _ in range(HUGE // 65536)))
    growth = _rss_kib(bot.process.pid) - before
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert MAX_BODY < sent < HUGE / 10 and growth < 10 * 1024
    record("bodies", f"{path}: chunked 200 MB unauthenticated → 413 after {sent / 1e6:.1f} MB sent; "
                     f"RSS growth {growth / 1024:.1f} MB")


def test_a_body_dripped_a_byte_every_two_seconds_is_cut_off_at_the_deadline(bot):
    with _connect(bot) as conn:
        conn.sendall(_head("/slack/events", "Content-Length: 100"))
        started = time.monotonic()
        while not select.select([conn], [], [], 2)[0]:
            conn.sendall(b"a")
            assert time.monotonic() - started < BODY_DEADLINE_SECONDS + 10, "still open past the deadline"
        answer = _read_all(conn)
        closed_after = time.monotonic() - started
    assert answer.startswith(b"HTTP/1.1 408") and closed_after < BODY_DEADLINE_SECONDS + 3
    record("bodies", f"a byte every 2 s → 408 and closed after {closed_after:.1f} s "
                     f"(deadline {BODY_DEADLINE_SECONDS:.0f} s)")


def test_the_bot_still_answers_after_the_attacks(bot):
    assert bot.command("help").status_code == 200

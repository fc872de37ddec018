"""The terminal demo: type `/gpu …` lines; each goes through the real Bolt app as a signed Slack request, and what
the bot sends back to (a local stand-in of) Slack is printed as text. Buttons are numbered, `[1 Extend 1h]
[2 Release]`: typing `2` clicks Release, as a signed block_actions request. What the bot sent meanwhile (a
queued booking landing, a DM, an expiry warning the outbox delivered) is printed as it arrives, its buttons
numbered so a typed number clicks them (without a terminal: before the next answer; an empty line shows it)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from slack_bolt import BoltRequest

from gpubot.sandbox.render import render_call
from gpubot.sandbox.requests import action_body, sign, slash_command_body
from gpubot.sandbox.slack_api import FakeSlackApi, SlackCall
from gpubot.signing import is_signed
from gpubot.wiring import Wired

__all__ = ["Console"]

PROMPT = "gpubot> "
NOT_A_COMMAND = "Commands start with /gpu — try /gpu help (a number clicks a button)"


@dataclass(frozen=True)
class _Button:
    """A button shown on screen: what clicking it sends."""

    action_id: str
    value: str
    channel: str
    ts: str


class Console:
    """Sends typed commands and clicks through the Bolt app and prints what reaches Slack."""

    def __init__(self, wired: Wired, api: FakeSlackApi, signing_secret: str, user: str = "UDEMOADMIN",
                 channel: str = "CDEMO", banner: str = "", history: Path | None = None) -> None:
        self.wired, self.api, self.secret = wired, api, signing_secret
        self.user, self.channel, self.banner, self.history = user, channel, banner, history
        self._ids = itertools.count(1)
        self._shown = len(api.calls)  # Web API calls already printed
        self._buttons: dict[int, _Button] = {}  # the numbers of the buttons last shown
        self._turn = threading.RLock()  # one of the person's lines or the follower prints at a time

    # -- what the person does ---------------------------------------------------------------------------
    def send(self, line: str) -> list[str]:
        """Run one `/gpu …` line; return what the person would see."""
        text = line.strip().removeprefix("/gpu").strip()
        body = slash_command_body(text, user=self.user, channel=self.channel, response_url=self._response_url())
        return self._dispatch(body, "application/x-www-form-urlencoded")

    def click(self, number: int) -> list[str]:
        """Click button `number` of those last shown."""
        button = self._buttons.get(number)
        if button is None:
            shown = f"1–{max(self._buttons)}" if self._buttons else "none"
            return [f"There is no button {number} on screen (numbered now: {shown})."]
        body = action_body(button.action_id, button.value, user=self.user, channel=button.channel,
                           message_ts=button.ts, response_url=self._response_url())
        return self._dispatch(body, "application/x-www-form-urlencoded")

    def pending(self) -> list[str]:
        """What the bot sent since the last look (background work: a booking landing, a DM)."""
        return self._show(self._new_calls())

    # -- the wire -------------------------------------------------------------------------------------------
    def _response_url(self) -> str:
        return self.api.response_url(f"cmd{next(self._ids)}")

    def _dispatch(self, body: bytes, content_type: str) -> list[str]:
        seen = len(self.api.calls)
        headers = {"Content-Type": content_type, **sign(self.secret, body)}
        if not is_signed(self.wired.settings.slack_signing_secret, body.decode(), headers):
            return ["(HTTP 401) invalid signature"]  # checked here as the HTTP route checks it: Bolt does not
        response = self.wired.app.dispatch(BoltRequest(body=body.decode(), headers=headers))
        answered = [response.body] if response.status == 200 and response.body else []
        if response.status != 200:
            answered.append(f"(HTTP {response.status}) {response.body}")
        # A reply in the ack's body may be all there is; otherwise the listener's workers answer shortly.
        self.api.wait_quiet(after=None if answered else seen)
        return answered + self._show(self._new_calls())  # what came meanwhile, then this command's effects

    def _new_calls(self) -> list[SlackCall]:
        calls = self.api.calls[self._shown:]
        self._shown += len(calls)
        return calls

    # -- the screen -------------------------------------------------------------------------------------------
    def _show(self, calls: list[SlackCall]) -> list[str]:
        """The calls as text; when they show buttons, those are numbered from 1 and become the clickable ones.
        A message updated several times shows its buttons on its latest version only."""
        numbered: dict[int, _Button] = {}
        latest = {_where(call): i for i, call in enumerate(calls)}
        shown = [text for i, call in enumerate(calls) if (text := render_call(
            call.method, call.args, _numbering(call, numbered, self.channel) if latest[_where(call)] == i
            else lambda element: ""))]
        if numbered:
            self._buttons = numbered
        return shown

    def follow(self, write: Callable[[str], None], stop: threading.Event) -> None:
        """Until `stop`: print what the bot sends in the background as it arrives (numbering its buttons)."""
        while not stop.is_set():
            if not self.api.wait_for(lambda calls: len(calls) > self._shown, timeout=0.5):
                continue
            self.api.wait_quiet(0.2, timeout=2)  # a burst (a message and its update) shows as one
            with self._turn:
                lines = self.pending()
            if lines and not stop.is_set():
                write("\n" + "\n".join(lines) + "\n" + PROMPT)

    def handle(self, line: str) -> list[str] | None:
        """What one typed line shows; None to leave."""
        with self._turn:
            return self._handle(line)

    def _handle(self, line: str) -> list[str] | None:
        typed = line.strip()
        if typed in ("quit", "exit"):
            return None
        if not typed:
            return self.pending()
        if typed.isdigit():
            return self.click(int(typed))
        if not (typed == "/gpu" or typed.startswith("/gpu ")):
            return [*self.pending(), NOT_A_COMMAND]
        return self.send(typed)

    def loop(self, read: Callable[[str], str] = input, write: Callable[[str], None] = print,
             follow: bool | None = None) -> None:
        """Read lines until EOF or `quit` (with line editing and history on a terminal); with `follow` (on a
        terminal by default) what arrives meanwhile is printed at once."""
        editing = _LineEditing.start(self.history) if read is input else None
        write(self.banner)
        stop = threading.Event()
        if read is input if follow is None else follow:
            threading.Thread(target=self.follow, args=(lambda text: write(text), stop), daemon=True).start()
        try:
            while True:
                try:
                    line = read(PROMPT)
                except (EOFError, KeyboardInterrupt):
                    write("")
                    return
                if editing and not line.strip().startswith("/gpu"):
                    editing.forget_last()  # `quit`, a button number: nothing to recall later
                shown = self.handle(line)
                if shown is None:
                    return
                for item in shown:
                    write(item)
        finally:
            stop.set()
            if editing:
                editing.save()


@dataclass
class _LineEditing:
    """readline on a terminal: arrow keys, Ctrl-R, and the history kept in a file across runs."""

    readline: object
    history: Path | None

    @classmethod
    def start(cls, history: Path | None) -> _LineEditing | None:
        """Turn line editing on when reading from a terminal (None elsewhere, or without readline)."""
        import sys

        if not sys.stdin.isatty():
            return None
        try:
            import readline
        except ImportError:  # Windows without pyreadline: plain input() still works
            return None
        readline.set_history_length(1000)
        if history and history.exists():
            readline.read_history_file(history)
        return cls(readline, history)

    def forget_last(self) -> None:
        """Drop the line just read from the history."""
        length = self.readline.get_current_history_length()
        if length:
            self.readline.remove_history_item(length - 1)

    def save(self) -> None:
        """Write the history to its file."""
        if self.history:
            self.readline.write_history_file(self.history)


def _where(call: SlackCall) -> tuple[str, str]:
    """The message a call posts or updates: (channel, ts); ("", "") for an answer that is no message."""
    return str(call.result.get("channel") or call.args.get("channel") or ""), \
        str(call.result.get("ts") or call.args.get("ts") or "")


def _numbering(call: SlackCall, numbered: dict[int, _Button], default_channel: str) -> Callable[[dict], str]:
    """How the buttons of one call are shown, `[2 Release]`, each added to `numbered`."""
    channel, ts = _where(call)
    channel = channel or default_channel

    def button(element: dict) -> str:
        number = len(numbered) + 1
        numbered[number] = _Button(element.get("action_id", ""), str(element.get("value", "")), channel, ts)
        label = element.get("text")
        return f"[{number} {label.get('text', '') if isinstance(label, dict) else label}]"
    return button

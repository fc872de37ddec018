"""The terminal demo: type `/gpu …` lines; each goes through the real Bolt app as a signed Slack request,
and what the bot sends back to (a local stand-in of) Slack is printed as text."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from slack_bolt import BoltRequest

from gpubot.sandbox.render import render_call
from gpubot.sandbox.requests import sign, slash_command_body
from gpubot.sandbox.slack_api import FakeSlackApi
from gpubot.wiring import Wired

__all__ = ["Console"]

PROMPT = "gpubot> "
BANNER = ("gpubot demo — the simulated cloud, a local SQLite ledger, no Slack needed.\n"
          "Type /gpu help, /gpu book a100x4 6h, /gpu status … ; 'quit' to leave.")


class Console:
    """Sends typed commands through the Bolt app and prints what reaches Slack."""

    def __init__(self, wired: Wired, api: FakeSlackApi, signing_secret: str, user: str = "UDEMOADMIN",
                 channel: str = "CDEMO") -> None:
        self.wired, self.api, self.secret = wired, api, signing_secret
        self.user, self.channel = user, channel
        self._ids = itertools.count(1)

    def send(self, line: str) -> list[str]:
        """Run one `/gpu …` line; return what the person would see."""
        text = line.strip().removeprefix("/gpu").strip()
        seen = len(self.api.calls)
        body = slash_command_body(text, user=self.user, channel=self.channel,
                                  response_url=self.api.response_url(f"cmd{next(self._ids)}"))
        response = self.wired.app.dispatch(BoltRequest(body=body.decode(), headers=sign(self.secret, body)))
        shown = [response.body] if response.status == 200 and response.body else []
        if response.status != 200:
            shown.append(f"(HTTP {response.status}) {response.body}")
        # A reply in the ack's body may be all there is; otherwise the listener's workers answer shortly.
        self.api.wait_quiet(after=None if shown else seen)
        for call in self.api.calls[seen:]:
            rendered = render_call(call.method, call.args)
            if rendered:
                shown.append(rendered)
        return shown

    def loop(self, read: Callable[[str], str] = input, write: Callable[[str], None] = print) -> None:
        """Read lines until EOF or `quit`."""
        write(BANNER)
        while True:
            try:
                line = read(PROMPT)
            except (EOFError, KeyboardInterrupt):
                write("")
                return
            if line.strip() in ("quit", "exit"):
                return
            if not line.strip():
                continue
            if not line.strip().startswith("/gpu"):
                write("Commands start with /gpu — try /gpu help")
                continue
            for item in self.send(line):
                write(item)

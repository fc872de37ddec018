"""Know when all the work for one Slack request has finished: the request's ticket travels (a context variable)
from the HTTP route into Bolt's listener threads and on into ctx.later's workers; each holds it while it runs, and
the last to let go calls the ticket's `done` (the inbox marks the command done)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar, copy_context

__all__ = ["Ticket", "TicketedExecutor", "current_ticket"]

log = logging.getLogger(__name__)

current_ticket: ContextVar[Ticket | None] = ContextVar("gpubot_ticket", default=None)


class Ticket:
    """Held by the route and every piece of work its request started; `done` runs once all have let go."""

    def __init__(self, done: Callable[[], object]) -> None:
        self._done, self._holders, self._lock = done, 1, threading.Lock()  # the route holds it first

    def hold(self) -> None:
        """One more piece of work runs for this request."""
        with self._lock:
            self._holders += 1

    def release(self) -> None:
        """One piece of work finished; the last one calls `done`."""
        with self._lock:
            self._holders -= 1
            last = self._holders == 0
        if last:
            try:
                self._done()
            except Exception:  # the row stays open: the next start tells the sender to send again
                log.exception("could not mark a Slack request done")


class TicketedExecutor(ThreadPoolExecutor):
    """A thread pool whose tasks carry (and hold) the ticket of the request that submitted them."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        """Run `fn` in the submitter's context, holding its ticket until `fn` returns or raises."""
        ticket = current_ticket.get()
        context = copy_context()
        if ticket is None:
            return super().submit(context.run, fn, *args, **kwargs)
        ticket.hold()

        def run():
            try:
                return context.run(fn, *args, **kwargs)
            finally:
                ticket.release()
        try:
            return super().submit(run)
        except BaseException:
            ticket.release()
            raise

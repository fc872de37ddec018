"""A request's ticket is done only after the route and every task it started (and their tasks) let go."""

from __future__ import annotations

import threading

from gpubot.bot.tickets import Ticket, TicketedExecutor, current_ticket


def test_done_waits_for_nested_work_started_by_the_request():
    finished: list[str] = []
    gate = threading.Event()
    ticket = Ticket(lambda: finished.append("done"))
    outer, inner = TicketedExecutor(2, "t-outer"), TicketedExecutor(2, "t-inner")

    def slow_work() -> None:
        gate.wait(5)
        finished.append("work")

    def listener() -> None:
        inner.submit(slow_work)  # what ctx.later does: the ticket travels on

    token = current_ticket.set(ticket)
    outer.submit(listener).result(5)
    current_ticket.reset(token)
    ticket.release()  # the route lets go after the ack
    assert finished == []
    gate.set()
    inner.shutdown(wait=True)
    outer.shutdown(wait=True)
    assert finished == ["work", "done"]


def test_work_that_raises_still_lets_go_and_work_without_a_ticket_runs():
    finished: list[str] = []
    ticket = Ticket(lambda: finished.append("done"))
    pool = TicketedExecutor(1, "t-raise")
    token = current_ticket.set(ticket)
    future = pool.submit(lambda: 1 / 0)
    current_ticket.reset(token)
    assert isinstance(future.exception(5), ZeroDivisionError)
    assert finished == []
    ticket.release()
    assert finished == ["done"]
    assert pool.submit(lambda: 42).result(5) == 42
    pool.shutdown(wait=True)

"""The outbox, in two parts: owing notices in the transaction of their cause (`owing`) and the worker that hands
them to their channels (`worker`)."""

from gpubot.scheduling.delivery.owing import move_booking, show_progress, show_replacing, tell
from gpubot.scheduling.delivery.worker import (
    FOLLOW_WAIT,
    LEASE,
    MAX_ATTEMPTS,
    MAX_BACKOFF,
    deliver_due,
    forget_claims,
    run_deliveries,
    views_of,
)

__all__ = ["FOLLOW_WAIT", "LEASE", "MAX_ATTEMPTS", "MAX_BACKOFF", "deliver_due", "forget_claims", "move_booking",
           "run_deliveries", "show_progress", "show_replacing", "tell", "views_of"]

"""What this process knows of each open booking modal: the choices of its latest pick and the latest hash its own
views.update got back.

Slack changes a view's hash only on the app's updates, never on a person's picks, and a `hash_conflict` answer
does not carry the current hash. So a quote computed for a pick is shown only while that pick is still the
latest one (a newer pick's own quote follows), and after a conflict it is sent again with the hash of the
app's latest update."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

__all__ = ["ModalStates"]

KEEP_FOR = 3600.0  # seconds a modal is remembered after its last pick or update


@dataclass
class _Modal:
    at: float
    choice: tuple[str, ...] | None = None  # the choices of the latest pick (None: nobody picked yet)
    hash: str | None = None  # the hash the app's latest views.update returned
    sending: threading.Lock = field(default_factory=threading.Lock)  # one views.update of this modal at a time


@dataclass
class ModalStates:
    """Per open modal: its latest pick and latest known hash (thread-safe)."""

    _modals: dict[str, _Modal] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _get(self, view_id: str) -> _Modal:
        now = time.monotonic()
        self._modals = {v: m for v, m in self._modals.items() if now - m.at < KEEP_FOR}
        modal = self._modals.setdefault(view_id, _Modal(now))
        modal.at = now
        return modal

    def picked(self, view_id: str, choice: tuple[str, ...]) -> None:
        """A person picked: `choice` is what the modal now holds."""
        with self._lock:
            self._get(view_id).choice = choice

    def sending(self, view_id: str) -> threading.Lock:
        """Held around check, views.update and `updated`, so that a conflict always finds the newer hash."""
        with self._lock:
            return self._get(view_id).sending

    def is_latest(self, view_id: str, choice: tuple[str, ...] | None) -> bool:
        """Whether `choice` is still what the modal holds (None: the opening choice, nobody has picked since)."""
        with self._lock:
            modal = self._modals.get(view_id)
            return (modal.choice if modal else None) == choice

    def updated(self, view_id: str, view_hash: str | None) -> None:
        """The app's views.update went through and returned `view_hash`."""
        if view_hash:
            with self._lock:
                self._get(view_id).hash = view_hash

    def hash_of(self, view_id: str) -> str | None:
        """The hash of the app's latest update of the modal, if this process made one."""
        with self._lock:
            modal = self._modals.get(view_id)
            return modal.hash if modal else None

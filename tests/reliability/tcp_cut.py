"""A TCP relay on 127.0.0.1 that a test can cut and restore: a database outage without stopping the database."""

from __future__ import annotations

import contextlib
import socket
import threading

__all__ = ["TcpRelay"]


class TcpRelay:
    """Relays 127.0.0.1:<port> to `target`; `cut()` drops every connection and refuses new ones until `restore()`."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._open = True
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self._open:
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for s in (source, sink):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """Drop every relayed connection; new ones are closed at once."""
        self._open = False
        with self._lock:
            for s in self._sockets:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            self._sockets.clear()

    def restore(self) -> None:
        """Relay new connections again."""
        self._open = True

    def close(self) -> None:
        """Stop relaying."""
        self.cut()
        self.listener.close()

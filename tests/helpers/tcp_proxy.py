"""A TCP proxy between bpm's processes and PostgreSQL, for cutting the network in tests.

``cut()`` closes every proxied connection and turns new ones away (accepted, then closed at
once, as a server that is going down does) until ``restore()``; the processes behind it see
exactly what a network cut or a database restart shows them, while the real server, and
every other test's use of it, is left alone.
"""

from __future__ import annotations

import socket
import threading
from types import TracebackType

from sqlalchemy.engine import make_url


class TcpProxy:
    """Forwards 127.0.0.1:<port> to ``target``; stop it with ``close()`` or ``with``."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._cut = False
        self._closed = False
        threading.Thread(target=self._accept, name="tcp-proxy", daemon=True).start()

    @classmethod
    def to_database(cls, url: str) -> TcpProxy:
        parsed = make_url(url)
        return cls(parsed.host or "127.0.0.1", parsed.port or 5432)

    def url_for(self, url: str) -> str:
        """``url`` with its host and port replaced by this proxy's."""
        return (
            make_url(url)
            .set(host="127.0.0.1", port=self.port)
            .render_as_string(hide_password=False)
        )

    def cut(self) -> int:
        """Drop every connection now and refuse new ones until ``restore``; returns how many
        proxied connections were dropped."""
        with self._lock:
            self._cut = True
            dropped, self._open = self._open, set()
        for sock in dropped:
            _close(sock)
        return len(dropped) // 2

    def restore(self) -> None:
        with self._lock:
            self._cut = False

    @property
    def connections(self) -> int:
        """Sockets open through the proxy (two per proxied connection)."""
        with self._lock:
            return len(self._open)

    def close(self) -> None:
        self._closed = True
        self.cut()
        _close(self._listener)

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                refuse = self._cut
            if refuse:
                _close(client)
                continue
            try:
                server = socket.create_connection(self._target, timeout=5)
                server.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                if self._cut:  # cut while connecting
                    _close(client)
                    _close(server)
                    continue
                self._open.update((client, server))
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.discard(src)
                self._open.discard(dst)
            _close(src)
            _close(dst)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()

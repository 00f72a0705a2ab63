"""The query endpoint's connections: a bounded worker pool behind one selector thread.

``http.server.ThreadingHTTPServer`` starts a thread per connection and listens with a
backlog of 5: under 50 concurrent clients the kernel drops SYNs past the backlog and
the client retries a second later (the 1.45 s p99 of issue 43), and any number of
clients can make the application start threads. Here one thread accepts connections
(backlog :data:`BACKLOG`) and watches them until a request arrives (idle and half-open
connections cost no worker); a connection with data goes to a fixed pool of workers
through a bounded queue; when that is full, one more thread answers 503 with
``Retry-After``. Each worker runs the standard library's request handler on its
connection (TLS handshake included, with a timeout), so no HTTP is parsed here.
A client that goes away is counted, never a traceback.
"""
from __future__ import annotations

import logging
import queue
import selectors
import socket
import ssl
import threading
import time
from typing import Any, Callable, Optional

log = logging.getLogger("streamlib.query")

#: pending connections the kernel queues before we accept them
BACKLOG = 1024
#: connections waiting for their request at once; more are closed at once
MAX_WAITING = 4096
#: a connection that sends no request for this long is closed
IDLE_SECONDS = 30.0
#: connections waiting for a worker, per worker
QUEUE_PER_THREAD = 8
#: connections waiting to be told 503 at once; more are closed
REJECT_QUEUE = 256
#: what a client that hung up mid-request raises
DISCONNECTS = (ConnectionError, TimeoutError, ssl.SSLError, OSError)

#: (connection, client address, rejected) -> None: serves one connection
Serve = Callable[[Any, Any, bool], None]


class PooledServer:
    """Accepts on ``(host, port)`` and serves each connection with ``serve`` on a pool of
    ``threads`` workers (``serve(conn, address, True)`` when the pool is full: answer 503).

    ``on_disconnect()`` is called for each client that went away mid-request,
    ``on_rejected(reason)`` for each connection refused or closed unserved.
    """

    def __init__(self, host: str, port: int, serve: Serve, threads: int, timeout: float,
                 tls: Optional[ssl.SSLContext] = None,
                 on_disconnect: Callable[[], None] = lambda: None,
                 on_rejected: Callable[[str], None] = lambda reason: None):
        self._serve = serve
        self._timeout = timeout
        self._tls = tls
        self._on_disconnect = on_disconnect
        self._on_rejected = on_rejected
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, port), family=family, backlog=BACKLOG)
        self._listener.setblocking(False)
        self._wake_r, self._wake_w = socket.socketpair()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._waiting: dict[socket.socket, tuple[Any, float]] = {}
        self._jobs: queue.Queue = queue.Queue(maxsize=threads * QUEUE_PER_THREAD)
        self._rejects: queue.Queue = queue.Queue(maxsize=REJECT_QUEUE)
        self._running = False
        self._threads = [threading.Thread(target=self._accept, name="streamlib-http-accept", daemon=True)]
        self._threads += [threading.Thread(target=self._work, args=(self._jobs, False),
                                           name=f"streamlib-http-{i}", daemon=True) for i in range(threads)]
        self._threads.append(threading.Thread(target=self._work, args=(self._rejects, True),
                                              name="streamlib-http-busy", daemon=True))

    @property
    def address(self) -> tuple[str, int]:
        return self._listener.getsockname()[:2]

    def start(self) -> None:
        self._running = True
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._running = False
        self._wake_w.send(b"x")
        for q in (self._jobs, self._rejects):
            for _ in self._threads:
                try:
                    q.put_nowait(None)
                except queue.Full:
                    break
        for thread in self._threads:
            if thread.is_alive():
                thread.join(self._timeout + 1.0)
        for conn in list(self._waiting):
            _close(conn)
        self._waiting.clear()
        self._selector.close()
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()

    # -- the selector thread ---------------------------------------------------------------
    def _accept(self) -> None:
        while self._running:
            for key, _ in self._selector.select(timeout=1.0):
                sock = key.fileobj
                if sock is self._listener:
                    self._accept_all()
                elif sock is self._wake_r:
                    sock.recv(64)
                else:   # a request (or a hang-up) arrived: a worker takes it from here
                    self._selector.unregister(sock)
                    address, _ = self._waiting.pop(sock)
                    self._dispatch(sock, address)
            self._close_idle()

    def _accept_all(self) -> None:
        while True:
            try:
                conn, address = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:   # e.g. out of file descriptors: keep serving the rest
                log.warning("query endpoint: accept failed: %s", exc)
                return
            if len(self._waiting) >= MAX_WAITING:
                self._on_rejected("connections")
                _close(conn)
                continue
            conn.setblocking(False)
            self._waiting[conn] = (address, time.monotonic() + IDLE_SECONDS)
            self._selector.register(conn, selectors.EVENT_READ)

    def _dispatch(self, conn: socket.socket, address: Any) -> None:
        try:
            self._jobs.put_nowait((conn, address))
        except queue.Full:
            try:
                self._rejects.put_nowait((conn, address))
            except queue.Full:
                self._on_rejected("busy")
                _close(conn)

    def _close_idle(self) -> None:
        now = time.monotonic()
        for conn, (_, deadline) in list(self._waiting.items()):
            if deadline < now:
                self._selector.unregister(conn)
                del self._waiting[conn]
                self._on_rejected("idle")
                _close(conn)

    # -- the workers -----------------------------------------------------------------------
    def _work(self, jobs: queue.Queue, rejected: bool) -> None:
        while True:
            job = jobs.get()
            if job is None or not self._running:
                if job is not None:
                    _close(job[0])
                return
            conn, address = job
            try:
                conn.setblocking(True)
                conn.settimeout(self._timeout)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if self._tls is not None:
                    conn = self._tls.wrap_socket(conn, server_side=True)
                self._serve(conn, address, rejected)
            except DISCONNECTS as exc:
                self._on_disconnect()
                log.debug("query endpoint: client %s went away: %s", address, exc)
            except Exception:   # a bug in a handler must not end the worker
                log.exception("query endpoint: serving %s failed", address)
            finally:
                _close(conn)


def _close(conn: socket.socket) -> None:
    try:
        conn.close()
    except OSError:
        pass

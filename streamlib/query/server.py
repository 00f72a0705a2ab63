"""The query endpoint's connections: a bounded worker pool behind one selector thread.

``http.server.ThreadingHTTPServer`` starts a thread per connection and listens with a
backlog of 5: under 50 concurrent clients the kernel drops SYNs past the backlog and
the client retries a second later (the 1.45 s p99 of issue 43), and any number of
clients can make the application start threads. Here one thread accepts connections
(backlog :data:`BACKLOG`) and watches them until a request arrives (idle and half-open
connections cost no worker); a connection with data goes to a fixed pool of workers
through a bounded queue; when that is full, one more thread answers 503 with
``Retry-After``. Each worker serves its connection with the ``serve`` it is given
(:mod:`.http` over :mod:`.protocol`; the TLS handshake runs in the worker, with a
timeout), so no HTTP is parsed here. Given a ``quick`` handler too, the selector thread
first lets it answer a plain connection's cheap requests itself (point lookups: one
thread woken per request instead of two, and no GIL hand-over); what it leaves goes to
a worker. Then :data:`QUICK_POLLERS` selector threads poll the one epoll (each event
reported to one of them), everything said here of "the selector thread" holds for each.
A client that goes away is counted, never a traceback.
"""
from __future__ import annotations

import logging
import queue
import resource
import select
import selectors
import socket
import ssl
import sys
import threading
import time
from typing import Any, Callable, Optional

log = logging.getLogger("streamlib.query")

#: pending connections the kernel queues before we accept them
BACKLOG = 1024
#: connections waiting for their request at once; more are closed at once (half the
#: process's file descriptors at most: the application needs the rest)
MAX_WAITING = min(4096, resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 2)
#: a connection that sends no request for this long is closed
IDLE_SECONDS = 30.0
#: how often the selector thread looks for idle connections to close
IDLE_CHECK_SECONDS = 1.0
#: connections accepted before the selector thread looks at the others again
ACCEPTS_PER_ROUND = 8
#: threads that poll and answer ``quick`` requests (on epoll; at most the workers' number):
#: two beat four in each of 3 alternating pairs of closed-loop runs under Spark (p99 24-38
#: ms against 46-60 ms, the bench's JVM reniced): fewer threads taking turns at the GIL (README)
QUICK_POLLERS = 2
#: connections waiting for a worker, per worker
QUEUE_PER_THREAD = 16
#: connections waiting to be told 503 at once; more are closed
REJECT_QUEUE = 256
#: what a client that hung up mid-request raises
DISCONNECTS = (ConnectionError, TimeoutError, ssl.SSLError, OSError)
_PEEK = socket.MSG_PEEK | socket.MSG_DONTWAIT
#: Linux's accepted sockets take the listener's ``TCP_NODELAY``: one system call less
#: per connection
_NODELAY_INHERITED = sys.platform.startswith("linux")


class Connection:
    """One client connection between requests: its socket (TLS once the handshake ran)
    and what the protocol keeps across its requests (:attr:`reader`: requests a client
    sent ahead, pipelining, are not lost)."""

    def __init__(self, sock: socket.socket, address: Any):
        self.sock = sock
        self.fd = sock.fileno()
        self.address = address
        #: while it waits for a request: when it is closed unless one arrives
        self.deadline = 0.0
        #: whether it has waited in the poller before (the poller knows its descriptor)
        self.polled = False
        #: whether :meth:`open` ran (its first request was taken by a worker)
        self.opened = False
        #: the protocol's reader (set by ``serve``): its ``requests`` are read, not yet served
        self.reader: Any = None
        #: set by the handler: whether the connection stays open for another request
        self.keep_alive = False
        #: the rest of an answer the selector thread began sending (a worker sends it)
        self.pending = b""
        #: whether the selector thread answered a request on it (see :meth:`send_now`)
        self.answered = False

    def open(self, timeout: float, tls: Optional[ssl.SSLContext]) -> None:
        """Before its first request: blocking with a timeout, no Nagle delay, TLS."""
        self.opened = True
        self.sock.settimeout(timeout)   # blocking, with a timeout
        if not _NODELAY_INHERITED:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls is not None:
            self.sock = tls.wrap_socket(self.sock, server_side=True)

    def recv_now(self, size: int) -> Optional[bytes]:
        """On the selector thread, before :meth:`open`: what arrived, without waiting
        (``None``: nothing yet, ``b""``: the client closed)."""
        try:
            return self.sock.recv(size, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return None

    def send_now(self, data: bytes) -> bool:
        """On the selector thread, before :meth:`open`: sends ``data`` without waiting
        (and without Nagle's delay: pipelined answers follow); ``False``: the socket
        took only part, the rest is :attr:`pending` for a worker."""
        if not self.answered:
            self.answered = True
            if not _NODELAY_INHERITED:
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sent = self.sock.send(data, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            sent = 0
        if sent < len(data):
            self.pending = data[sent:]
            return False
        return True

    def has_buffered_request(self) -> bool:
        """Whether the next request's bytes are already read (the poller cannot see them)."""
        if self.reader is not None and self.reader.requests:
            return True
        return isinstance(self.sock, ssl.SSLSocket) and self.sock.pending() > 0

    def close(self) -> None:
        _close(self.sock)


#: (connection, rejected) -> None: serves one request of a connection
Serve = Callable[[Connection, bool], None]
#: (connection) -> bool: on the selector thread, before :meth:`Connection.open`, reads
#: what arrived without waiting and answers the cheap requests (:meth:`Connection.recv_now`,
#: :meth:`Connection.send_now`); ``True``: done for now (it waits for its next request
#: when ``keep_alive``, else is closed), ``False``: a worker takes it on from there
Quick = Callable[[Connection], bool]


class _Epoll:
    """Readiness of the listener and of waiting connections, Linux's way: a connection
    reports once (one-shot) and the worker that served it re-arms it from its own
    thread, so a kept-alive connection goes back to waiting in one system call
    without waking the selector thread."""

    def __init__(self) -> None:
        self._epoll = select.epoll()

    def watch(self, fd: int) -> None:
        """Report ``fd`` whenever it is readable (the listener, the wake-up socket)."""
        self._epoll.register(fd, select.EPOLLIN)

    def add(self, fd: int) -> None:
        """Report ``fd`` once, when it is readable (or closed)."""
        self._epoll.register(fd, select.EPOLLIN | select.EPOLLONESHOT)

    def rearm(self, fd: int, polled: bool) -> bool:
        """From any thread: report ``fd`` once more, or once if it was never ``polled``
        (``False``: only the selector thread can)."""
        if polled:
            self._epoll.modify(fd, select.EPOLLIN | select.EPOLLONESHOT)
        else:
            self.add(fd)
        return True

    def remove(self, fd: int) -> None:
        self._epoll.unregister(fd)

    def poll(self, timeout: float, most: int = -1) -> list[int]:
        return [fd for fd, _ in self._epoll.poll(timeout, most)]

    def close(self) -> None:
        self._epoll.close()


class _Selector:
    """:class:`_Epoll`'s calls with :mod:`selectors` where there is no epoll: one-shot by
    removing a connection when it reports; a worker cannot re-arm one (the selector
    thread does)."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._watched: set[int] = set()

    def watch(self, fd: int) -> None:
        self._watched.add(fd)
        self._selector.register(fd, selectors.EVENT_READ)

    def add(self, fd: int) -> None:
        self._selector.register(fd, selectors.EVENT_READ)

    def rearm(self, fd: int, polled: bool) -> bool:
        return False

    def remove(self, fd: int) -> None:
        self._selector.unregister(fd)

    def poll(self, timeout: float, most: int = -1) -> list[int]:
        fds = [key.fd for key, _ in self._selector.select(timeout)]
        for fd in fds:
            if fd not in self._watched:
                self._selector.unregister(fd)
        return fds

    def close(self) -> None:
        self._selector.close()


class PooledServer:
    """Accepts on ``(host, port)`` and serves each request with ``serve`` on a pool of
    ``threads`` workers (``serve(connection, True)`` when the pool is full: answer 503).
    A kept-alive connection goes back to the selector between requests, so an idle
    client holds no worker.

    ``quick`` (plain connections only: not with ``tls``) answers cheap requests on the
    selector thread, see :data:`Quick`.

    ``on_disconnect()`` is called for each client that went away mid-request,
    ``on_rejected(reason)`` for each connection refused or closed unserved.
    """

    def __init__(self, host: str, port: int, serve: Serve, threads: int, timeout: float,
                 tls: Optional[ssl.SSLContext] = None,
                 on_disconnect: Callable[[], None] = lambda: None,
                 on_rejected: Callable[[str], None] = lambda reason: None,
                 quick: Optional[Quick] = None):
        self._serve = serve
        self._quick = quick if tls is None else None
        self._timeout = timeout
        self._tls = tls
        self._on_disconnect = on_disconnect
        self._on_rejected = on_rejected
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._listener = socket.create_server((host, port), family=family, backlog=BACKLOG)
        self._listener.setblocking(False)
        self._listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)   # see _NODELAY_INHERITED
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._poller = _Epoll() if hasattr(select, "epoll") else _Selector()
        self._poller.watch(self._wake_r.fileno())
        #: connections waiting for a request, by file descriptor (workers add the ones
        #: they re-arm; the selector thread takes them out)
        self._waiting: dict[int, Connection] = {}
        self._next_idle_check = 0.0
        #: kept-alive connections the workers hand back to the selector thread (when
        #: the poller cannot re-arm them from a worker)
        self._returned: queue.SimpleQueue = queue.SimpleQueue()
        # A SimpleQueue hands a connection over in C, a Queue in Python under its own
        # locks; the polling threads put under ``_dispatching`` so that ``qsize()`` bounds
        # the queues (several polling threads checking at once overran the bound).
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._max_jobs = threads * QUEUE_PER_THREAD
        self._rejects: queue.SimpleQueue = queue.SimpleQueue()
        self._dispatching = threading.Lock()
        self._running = False
        # With a ``quick`` handler on epoll, several threads poll (each reported event
        # goes to one of them): the answers made there get more of the GIL's turns
        # beside the application's own threads than one thread would.
        pollers = min(QUICK_POLLERS, threads) if self._quick is not None and isinstance(self._poller, _Epoll) else 1
        self._most = 1 if pollers > 1 else -1
        # With several, the listener reports once (one-shot), to one polling thread, which
        # accepts one connection and then re-arms it (:meth:`_accept_one`): level-triggered,
        # each new connection woke every polling thread in turn, and all but one found
        # nothing to accept (each wake a thread switch and a turn of the GIL).
        self._accept_one_by_one = pollers > 1
        if self._accept_one_by_one:
            self._poller.add(self._listener.fileno())
        else:
            self._poller.watch(self._listener.fileno())
        self._threads = [threading.Thread(target=self._accept, name="streamlib-http-accept" + (f"-{i}" if i else ""),
                                          daemon=True) for i in range(pollers)]
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
        self._wake()
        for q in (self._jobs, self._rejects):
            for _ in self._threads:
                q.put(None)
        for thread in self._threads:
            if thread.is_alive():
                thread.join(self._timeout + 1.0)
        for conn in list(self._waiting.values()):
            conn.close()
        self._waiting.clear()
        while not self._returned.empty():
            self._returned.get().close()
        self._poller.close()
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:   # the wake-up pipe is full: the selector thread wakes anyway
            pass

    # -- the selector thread ---------------------------------------------------------------
    def _accept(self) -> None:
        listener, wake = self._listener.fileno(), self._wake_r.fileno()
        while self._running:
            for fd in self._poller.poll(1.0, self._most):
                try:
                    self._reported(fd, listener, wake)
                except Exception:   # a bug must not end a polling thread
                    log.exception("query endpoint: polling failed")
            if time.monotonic() >= self._next_idle_check:
                self._close_idle()

    def _reported(self, fd: int, listener: int, wake: int) -> None:
        if fd == listener:
            if self._accept_one_by_one:
                self._accept_one()
            else:
                self._accept_all()
        elif fd == wake:
            self._drain_wake()
        else:   # a request (or a hang-up) arrived
            conn = self._waiting.pop(fd, None)
            if conn is not None:   # not closed as idle meanwhile
                self._ready(conn)

    def _accept_all(self) -> None:
        """Accepts the connections waiting, :data:`ACCEPTS_PER_ROUND` at most: clients that
        reconnect at once must not keep the requests of connections already accepted
        waiting (the listener reports again at the next poll)."""
        for _ in range(ACCEPTS_PER_ROUND):
            try:
                sock, address = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:   # e.g. out of file descriptors: serve the rest, retry soon
                log.warning("query endpoint: accept failed: %s", exc)
                time.sleep(0.1)
                return
            conn = Connection(sock, address)
            # A client sends its request right after connecting: often it is here
            # already and is answered (or goes to a worker) without a selector round.
            if self._quick is not None:
                self._ready(conn)
                continue
            arrived = self._arrived(conn)
            if arrived is None:
                self._wait_for_request(conn)
            elif arrived:
                self._dispatch(conn)
            else:
                conn.close()

    def _accept_one(self) -> None:
        """One connection, its request answered if it is here (:meth:`_ready`), then the
        listener re-armed for the next one (any polling thread may take it). Re-armed
        after, not before: a system call lets the GIL go, and while the application's
        threads keep busy, getting it back can take a switch interval (5 ms); the calls
        between a request's arrival and its answer are the ones its latency pays for."""
        try:
            sock, address = self._listener.accept()
        except (BlockingIOError, InterruptedError):
            sock = None
        except OSError as exc:   # e.g. out of file descriptors: serve the rest, retry soon
            log.warning("query endpoint: accept failed: %s", exc)
            time.sleep(0.1)
            sock = None
        try:
            if sock is not None:
                self._ready(Connection(sock, address))
        finally:
            try:
                self._poller.rearm(self._listener.fileno(), True)
            except (OSError, ValueError):   # stopped meanwhile: the listener is closed
                if self._running:
                    raise

    def _drain_wake(self) -> None:
        if not self._running:   # left readable: every polling thread sees it and stops
            return
        try:
            while self._wake_r.recv(4096):
                pass
        except BlockingIOError:
            pass
        while not self._returned.empty():
            self._wait_for_request(self._returned.get())

    def _wait_for_request(self, conn: Connection, rearm: bool = False) -> bool:
        """Waits for ``conn``'s next request (``rearm``: it waited before and is back
        from a worker); ``False`` if it must be handed to the selector thread instead."""
        if len(self._waiting) >= MAX_WAITING:
            self._on_rejected("connections")
            conn.close()
            return True
        conn.deadline = time.monotonic() + IDLE_SECONDS
        self._waiting[conn.fd] = conn
        # Marked polled before the call: once armed, another polling thread may take the
        # connection while this one waits for the GIL, and re-arm it (adding it again
        # failed with EEXIST and ended that polling thread).
        polled, conn.polled = conn.polled, True
        if not rearm:
            self._poller.add(conn.fd)
        elif not self._poller.rearm(conn.fd, polled):
            del self._waiting[conn.fd]
            conn.polled = polled
            return False
        return True

    def _ready(self, conn: Connection) -> None:
        """A request's bytes (or a hang-up) arrived on ``conn``: answered here by the
        ``quick`` handler when it can (never once a worker opened it), else by a worker."""
        if self._quick is None or conn.opened:
            if self._hung_up(conn):
                conn.close()
            else:
                self._dispatch(conn)
            return
        try:
            done = self._quick(conn)
        except DISCONNECTS as exc:
            self._on_disconnect()
            log.debug("query endpoint: client %s went away: %s", conn.address, exc)
            conn.close()
            return
        except Exception:   # a bug in a handler must not end the selector thread
            log.exception("query endpoint: serving %s failed", conn.address)
            conn.close()
            return
        if not done:
            self._dispatch(conn)
        elif not (conn.keep_alive and self._running):
            conn.close()
        elif not self._wait_for_request(conn, rearm=conn.polled):
            self._wait_for_request(conn)   # a poller that forgot it when it reported

    def _hung_up(self, conn: Connection) -> bool:
        """Whether the client closed (or reset) the connection instead of sending a
        request: then it needs no worker."""
        return self._arrived(conn) is False

    def _arrived(self, conn: Connection) -> Optional[bool]:
        """Whether a request's bytes arrived (``False``: the client closed or reset the
        connection instead, ``None``: nothing yet). Peeks at the raw bytes (TLS records too)."""
        try:
            return socket.socket.recv(conn.sock, 1, _PEEK) != b""
        except (BlockingIOError, InterruptedError):
            return None
        except OSError as exc:   # reset: it went away with its request unanswered
            self._on_disconnect()
            log.debug("query endpoint: client %s went away: %s", conn.address, exc)
            return False

    def _dispatch(self, conn: Connection) -> None:
        """To a worker, or to be told 503 when :attr:`_max_jobs` wait, or closed when
        :data:`REJECT_QUEUE` wait for that too (checked and put as one step: every
        polling thread dispatches)."""
        with self._dispatching:
            if self._jobs.qsize() < self._max_jobs:
                self._jobs.put(conn)
                return
            if self._rejects.qsize() < REJECT_QUEUE:
                self._rejects.put(conn)
                return
        self._on_rejected("busy")
        conn.close()

    def _close_idle(self) -> None:
        now = time.monotonic()
        self._next_idle_check = now + IDLE_CHECK_SECONDS
        for fd, conn in list(self._waiting.items()):
            if conn.deadline < now and self._waiting.pop(fd, None) is conn:
                self._poller.remove(fd)
                if not (conn.opened or conn.answered):   # kept-alive connections simply time out
                    self._on_rejected("idle")
                conn.close()

    # -- the workers -----------------------------------------------------------------------
    def _work(self, jobs: queue.SimpleQueue, rejected: bool) -> None:
        while True:
            conn = jobs.get()
            if conn is None or not self._running:
                if conn is not None:
                    conn.close()
                return
            keep = False
            try:
                if not conn.opened:
                    try:
                        conn.open(self._timeout, self._tls)
                    except ssl.SSLError as exc:   # not TLS, or a certificate it refused
                        self._on_rejected("tls")
                        log.debug("query endpoint: TLS handshake with %s failed: %s", conn.address, exc)
                        conn.close()
                        continue
                more = True
                if conn.pending:   # the rest of an answer the selector thread began
                    pending, conn.pending = conn.pending, b""
                    conn.sock.sendall(pending)
                    keep = conn.keep_alive and self._running
                    more = keep and conn.has_buffered_request()
                while more:   # requests already sent (pipelined) are served here
                    conn.keep_alive = False
                    self._serve(conn, rejected)
                    keep = conn.keep_alive and self._running and not rejected
                    more = keep and conn.has_buffered_request()
            except DISCONNECTS as exc:
                keep = False
                self._on_disconnect()
                log.debug("query endpoint: client %s went away: %s", conn.address, exc)
            except Exception:   # a bug in a handler must not end the worker
                keep = False
                log.exception("query endpoint: serving %s failed", conn.address)
            if keep:
                self._hand_back(conn)
            else:
                conn.close()

    def _hand_back(self, conn: Connection) -> None:
        """A kept-alive connection waits for its next request, re-armed from this worker
        or by the selector thread."""
        try:
            if self._wait_for_request(conn, rearm=True):
                return
        except OSError as exc:   # it cannot be polled: close it
            self._waiting.pop(conn.fd, None)
            log.debug("query endpoint: cannot wait on %s: %s", conn.address, exc)
            conn.close()
            return
        self._returned.put(conn)
        self._wake()


def _close(conn: socket.socket) -> None:
    try:
        conn.close()
    except OSError:
        pass

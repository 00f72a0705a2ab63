"""The query endpoint's connection pool without HTTP: what its selector thread answers
itself (``quick``) and what it leaves to a worker."""
from __future__ import annotations

import queue
import socket
import threading

import pytest

from streamlib.query.server import ACCEPTS_PER_ROUND, QUEUE_PER_THREAD, PooledServer

BIG = 32 << 20   # more than a loopback socket's buffers take at once


class _Lines:
    """Requests are lines: ``quick <n>`` is answered on the selector thread with ``n``
    bytes, anything else by a worker with ``worker\\n``; the threads are recorded."""

    def __init__(self):
        self.threads: list[str] = []

    def quick(self, conn) -> bool:
        data = conn.recv_now(65536)
        conn.keep_alive = data != b""
        if not data:
            return True
        if not data.startswith(b"quick "):
            conn.reader = _Read(data)   # what a worker serves
            return False
        self.threads.append(threading.current_thread().name)
        return conn.send_now(b"q" * int(data.split()[1]))

    def serve(self, conn, rejected: bool) -> None:
        data = conn.reader.data if conn.reader is not None else conn.sock.recv(65536)
        conn.reader = None
        if not data:
            return
        self.threads.append(threading.current_thread().name)
        conn.sock.sendall(b"worker\n")
        conn.keep_alive = True


class _Read:
    requests = ()

    def __init__(self, data: bytes):
        self.data = data


@pytest.fixture
def pool():
    lines = _Lines()
    server = PooledServer("127.0.0.1", 0, lines.serve, 2, 10.0, quick=lines.quick)
    server.start()
    yield server, lines
    server.stop()


def _read(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        assert chunk, "closed early"
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def test_quick_requests_are_answered_on_the_selector_thread_others_by_a_worker(pool):
    server, lines = pool
    with socket.create_connection(server.address, timeout=10) as s:
        s.sendall(b"quick 3\n")
        assert _read(s, 3) == b"qqq"
        s.sendall(b"slow\n")
        assert _read(s, 7) == b"worker\n"
    assert lines.threads[0].startswith("streamlib-http-accept")
    assert lines.threads[1].startswith("streamlib-http-") and not lines.threads[1].startswith("streamlib-http-accept")


def test_an_answer_the_socket_does_not_take_at_once_is_finished_by_a_worker(pool):
    server, lines = pool
    with socket.create_connection(server.address, timeout=10) as s:
        s.sendall(b"quick %d\n" % BIG)
        assert _read(s, BIG) == b"q" * BIG   # read only once the selector thread moved on
        s.sendall(b"slow\n")   # the connection stays usable
        assert _read(s, 7) == b"worker\n"
    with socket.create_connection(server.address, timeout=10) as s:   # and the selector thread serves on
        s.sendall(b"quick 1\n")
        assert _read(s, 1) == b"q"


def test_a_round_accepts_a_bounded_number_of_connections():
    """Connections accepted (and answered) in one go keep the requests of connections
    already waiting in the poller waiting: a round stops after ACCEPTS_PER_ROUND."""
    lines = _Lines()
    server = PooledServer("127.0.0.1", 0, lines.serve, 1, 10.0, quick=lines.quick)   # not started
    clients = [socket.create_connection(server.address, timeout=10) for _ in range(ACCEPTS_PER_ROUND + 2)]
    try:
        for c in clients:
            c.sendall(b"quick 1\n")
        server._accept_all()
        assert len(lines.threads) == ACCEPTS_PER_ROUND
        server._accept_all()
        assert len(lines.threads) == ACCEPTS_PER_ROUND + 2
        assert all(_read(c, 1) == b"q" for c in clients)
    finally:
        for c in clients:
            c.close()
        server.stop()


class _Crowded:
    """A job queue whose ``qsize`` reads the size, then waits until ``n`` callers read
    it (``wait`` s at most, when they come one at a time) before answering: polling
    threads that check the bound together, as they can."""

    def __init__(self, n: int, wait: float):
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self._together = threading.Barrier(n, timeout=wait)

    def qsize(self) -> int:
        size = self.queue.qsize()
        try:
            self._together.wait()
        except threading.BrokenBarrierError:   # the callers came one at a time
            pass
        return size

    def put(self, item) -> None:
        self.queue.put(item)


class _Job:
    closed = False

    def close(self) -> None:
        self.closed = True


def test_polling_threads_dispatching_at_once_keep_the_worker_queues_bound():
    """Four polling threads dispatch when one place is left in the worker queue: one
    connection gets it, the others wait to be told 503 (the bound held only while one
    thread dispatched)."""
    pollers = 4
    server = PooledServer("127.0.0.1", 0, lambda conn, rejected: None, 1, 10.0)   # not started
    jobs = server._jobs = _Crowded(pollers, wait=1.0)
    try:
        for _ in range(QUEUE_PER_THREAD - 1):
            jobs.put(_Job())
        conns = [_Job() for _ in range(pollers)]
        threads = [threading.Thread(target=server._dispatch, args=(c,)) for c in conns]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert jobs.queue.qsize() == QUEUE_PER_THREAD
        assert server._rejects.qsize() == pollers - 1
        assert not any(c.closed for c in conns)
    finally:
        server._jobs = queue.SimpleQueue()
        server.stop()


def test_with_several_polling_threads_a_new_connection_is_reported_to_one():
    """The listener reports a connection once (one-shot): level-triggered it was
    reported to every polling thread waiting, all but one of them then finding nothing
    to accept; the one accepts it and re-arms the listener for the next."""
    lines = _Lines()
    server = PooledServer("127.0.0.1", 0, lines.serve, 2, 10.0, quick=lines.quick)   # not started
    listener = server._listener.fileno()
    clients = [socket.create_connection(server.address, timeout=10) for _ in range(2)]
    try:
        for c in clients:
            c.sendall(b"quick 1\n")
        assert server._poller.poll(5.0, 1) == [listener]
        assert server._poller.poll(0, 1) == []   # not to a second thread
        server._accept_one()
        assert len(lines.threads) == 1
        assert server._poller.poll(5.0, 1) == [listener]   # re-armed: the other connection
        server._accept_one()
        assert len(lines.threads) == 2
        assert all(_read(c, 1) == b"q" for c in clients)
    finally:
        for c in clients:
            c.close()
        server.stop()


def test_a_connection_another_polling_thread_takes_at_once_is_re_armed_not_added_again():
    """A connection accepted before its request arrived waits in the poller; its request
    can arrive, and another polling thread answer it, before the thread that added it
    gets the GIL back: that one must re-arm it (adding it twice failed with EEXIST and
    ended the polling thread)."""
    lines = _Lines()
    server = PooledServer("127.0.0.1", 0, lines.serve, 2, 10.0, quick=lines.quick)
    server._running = True   # its threads not started: this test is the polling threads
    add = server._poller.add
    client = socket.create_connection(server.address, timeout=10)

    def add_then_answer_elsewhere(fd: int) -> None:
        add(fd)
        if fd in server._waiting:   # as another polling thread would, before this one goes on
            client.sendall(b"quick 1\n")
            assert server._poller.poll(5.0, 1) == [fd]
            server._ready(server._waiting.pop(fd))

    server._poller.add = add_then_answer_elsewhere
    try:
        assert server._poller.poll(5.0, 1) == [server._listener.fileno()]
        server._accept_one()   # nothing sent yet: it waits in the poller
        assert _read(client, 1) == b"q"
        assert lines.threads and server._waiting   # answered, and waiting for the next request
        client.sendall(b"quick 2\n")
        fd = next(iter(server._waiting))
        assert server._poller.poll(5.0, 1) == [fd]
        server._ready(server._waiting.pop(fd))
        assert _read(client, 2) == b"qq"
    finally:
        client.close()
        server._poller.add = add
        server.stop()

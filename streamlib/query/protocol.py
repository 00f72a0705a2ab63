"""HTTP/1.1 requests read from a pooled connection with ``httptools`` (llhttp, the
parser in C that uvicorn uses), answers written whole in one ``sendall``.

The standard library's ``BaseHTTPRequestHandler`` parses headers in Python through
:mod:`email` and builds a handler object, a buffered reader and a writer per request:
about half of the endpoint's CPU for a point lookup in the worker. Here a connection
keeps one parser; a ``recv`` feeds it and every request it completes (pipelined ones
too) waits in :attr:`RequestReader.requests`. Only the method, the target, the
``Authorization`` header and keep-alive are kept: the endpoint needs nothing else.
"""
from __future__ import annotations

import collections
import http
import time
from email.utils import formatdate
from typing import Any, NamedTuple, Optional

import httptools

#: the longest request target, and request head, read (as ``http.server``: 64 KiB)
MAX_LINE = 65536
#: bytes of one request read before it is refused (its head and any body)
MAX_REQUEST = 4 * MAX_LINE
_REASONS = {s.value: s.phrase for s in http.HTTPStatus}


class Request(NamedTuple):
    method: bytes
    target: str
    authorization: Optional[str]
    keep_alive: bool


class BadRequest(Exception):
    """A request the endpoint answers with ``status`` and closes the connection."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status


class RequestReader:
    """One connection's requests, parsed as its bytes arrive."""

    def __init__(self) -> None:
        self.requests: collections.deque[Request] = collections.deque()
        self._parser = httptools.HttpRequestParser(self)
        self._target: list[bytes] = []
        self._target_bytes = 0
        self._authorization: Optional[bytes] = None
        #: bytes read of a request not yet complete
        self._partial = 0
        #: the answer owed once the complete requests are served (the parser failed)
        self._error: Optional[BadRequest] = None

    def next(self, sock: Any, timeout: float) -> Optional[Request]:
        """The next request, read from ``sock`` (blocking, ``timeout`` its timeout) for
        ``timeout`` at most; ``None`` when the client closed between requests. Raises
        :class:`BadRequest`, ``TimeoutError``, or ``ConnectionError`` when the client
        closed mid-request."""
        deadline = None
        while not self.requests:
            if self._error is not None:
                raise self._error
            if deadline is None:
                deadline = time.monotonic() + timeout
            else:   # a request sent byte by byte holds its worker ``timeout`` at most
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("request not complete in time")
                sock.settimeout(min(left, timeout))
            data = sock.recv(MAX_LINE)
            if not data:
                if self._partial:
                    raise ConnectionResetError("the client closed mid-request")
                return None
            self._feed(data)
        if deadline is not None and sock.gettimeout() != timeout:
            sock.settimeout(timeout)
        return self.requests.popleft()

    def read_now(self, conn: Any) -> bool:
        """Parses what arrived on ``conn`` (a :class:`~.server.Connection`) without
        waiting; ``False`` when the client closed between requests. Raises
        ``ConnectionError`` when it closed mid-request."""
        data = conn.recv_now(MAX_LINE)
        if data is None:
            return True
        if not data:
            if self._partial:
                raise ConnectionResetError("the client closed mid-request")
            return False
        self._feed(data)
        return True

    @property
    def started(self) -> bool:
        """Whether part of a request was read (or a bad one), not yet a whole request."""
        return bool(self._partial) or self._error is not None

    def _feed(self, data: bytes) -> None:
        self._partial += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:   # served as a plain request, then closed
            self._error = BadRequest(400, "protocol upgrades are not supported")
        except httptools.HttpParserError as exc:
            self._error = BadRequest(400, f"bad request: {exc}")
        if self._error is not None:
            return
        if self._target_bytes > MAX_LINE:
            self._error = BadRequest(414, "request target too long")
        elif self._partial > MAX_REQUEST:
            self._error = BadRequest(431, "request too large")

    # -- httptools' callbacks ----------------------------------------------------------------
    def on_message_begin(self) -> None:
        self._target.clear()
        self._target_bytes = 0
        self._authorization = None

    def on_url(self, url: bytes) -> None:
        self._target.append(url)
        self._target_bytes += len(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        if len(name) == 13 and name.lower() == b"authorization":
            self._authorization = value

    def on_message_complete(self) -> None:
        self._partial = 0
        if self._target_bytes > MAX_LINE:
            self._error = BadRequest(414, "request target too long")
        if self._error is not None:   # nothing after a bad request is served
            return
        auth = self._authorization
        self.requests.append(Request(self._parser.get_method(), b"".join(self._target).decode("latin-1"),
                                     None if auth is None else auth.decode("latin-1"),
                                     self._parser.should_keep_alive()))


def response(status: int, content_type: str, body: bytes, headers: dict, close: bool) -> bytes:
    """An answer's bytes: status line, headers and body."""
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, '')}", "Date: " + http_date(),
             "Content-Type: " + content_type, f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if close:
        lines.append("Connection: close")
    lines += ["", ""]
    return "\r\n".join(lines).encode("latin-1") + body


_date = (0, "")


def http_date() -> str:
    """The ``Date`` header's value now, formatted once a second."""
    global _date
    now = int(time.time())
    if _date[0] != now:
        _date = (now, formatdate(now, usegmt=True))
    return _date[1]

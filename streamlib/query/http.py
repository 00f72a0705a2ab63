"""The JSON HTTP endpoint for interactive queries (``StreamsConfig(application_server=...)``).

Routes (API.md): ``GET /stores`` (names and kinds), ``GET /stores/<store>/<key>``
(``{"key", "value"}`` of a key-value store), ``GET /metrics`` (Prometheus' text format,
:mod:`.metrics`), and pages ``{"entries": [...], "next": cursor}`` of at most ``limit``
entries: ``GET /stores/<store>?from=a&to=m`` (a key-value store's entries, both bounds
inclusive, either optional), ``GET /stores/<store>/<key>`` of a window store (with
``?time_from=&time_to=``) or a session store (the key's ``{"start", "end", "value"}``),
``GET /stores/<store>?from=a&to=m`` of a window or session store (the entries of keys
in that range, with their key; a window store's with ``&time_from=&time_to=`` too).
``?after=<cursor>`` continues in the batch the first page read (:mod:`.paging`).
400: bad parameters; 401: no valid bearer token; 404: unknown route, store or key; 410:
expired cursor; 413: the answer is over its size budget; 503: the store is not
queryable yet, the request is over its time budget, or the endpoint is busy (with
``Retry-After``). Keys in URLs are text, decoded with the store's key serde (string,
long, integer, double, bytes as UTF-8, json). Connections, the worker pool and TLS are
:mod:`.server`'s, reading requests and writing answers :mod:`.protocol`'s.
"""
from __future__ import annotations

import base64
import hmac
import ipaddress
import json
import logging
import ssl
import time
from typing import Any, Callable, Iterator, Optional
from urllib.parse import parse_qs, unquote, urlsplit

from streamlib.config import StreamsConfig, server_address
from streamlib.processors.stores import query_view
from streamlib.processors.stores.layout import KeyRange
from streamlib.query.metrics import CONTENT_TYPE, ApplicationMetrics
from streamlib.query.paging import Budget, Cursor, HttpError, PinnedVersions, scan_page
from streamlib.query.protocol import BadRequest, RequestReader, response
from streamlib.query.reads import NotYetQueryable
from streamlib.query.server import PooledServer
from streamlib.state.bounds import Bounds, prefix_bounds, range_bounds, within
from streamlib.state.kinds import StoreKind
from streamlib.time import to_millis

log = logging.getLogger("streamlib.query")
_MAX_TIME = (1 << 63) - 1
DEFAULT_LIMIT = 1000
#: pipelined point lookups of one connection answered at once on the selector thread
QUICK_REQUESTS = 16
_JSON = "application/json"


def decode_key(text: str, serde: Any) -> Any:
    """A URL's key text as the key serde's type (raises ValueError if it is not one)."""
    name = getattr(serde, "name", "string()")
    if name in ("long()", "integer()"):
        return int(text)
    if name == "double()":
        return float(text)
    if name == "bytes()":
        return text.encode()
    if name == "json()":
        return json.loads(text)
    if name == "string()":
        return text
    raise ValueError(f"keys of serde {name} cannot be given in a URL")


def _json_default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode()
    window = getattr(value, "window", None)
    if window is not None:
        return {"key": value.key, "start": window.start, "end": window.end}
    return str(value)


#: one encoder for every answer (``json.dumps`` with options builds one per call)
_ENCODER = json.JSONEncoder(default=_json_default, separators=(",", ":"))


def read_token(config: StreamsConfig) -> Optional[str]:
    """The bearer token the endpoint requires (``None``: none), from the config or its file."""
    if config.application_server_auth_token_file:
        path = config.application_server_auth_token_file
        try:
            with open(path, encoding="utf-8") as f:
                token = f.readline().strip()
        except OSError as exc:
            raise ValueError(f"application_server_auth_token_file {path!r}: {exc.strerror}") from None
        if not token:
            raise ValueError(f"application_server_auth_token_file {path!r} holds no token")
        return token
    return config.application_server_auth_token or None


def tls_context(files: Optional[tuple[str, str]]) -> Optional[ssl.SSLContext]:
    """A server context for ``(certfile, keyfile)`` (TLS 1.2 or newer), or ``None``."""
    if files is None:
        return None
    certfile, keyfile = files
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(certfile, keyfile)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"application_server_tls: cannot load {certfile!r} / {keyfile!r}: {exc}") from None
    return context


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class QueryServer:
    """The HTTP endpoint over an application's :class:`~streamlib.query.service.Queries`."""

    def __init__(self, queries: Any, metrics: ApplicationMetrics):
        config: StreamsConfig = queries.config
        self.queries = queries
        self.metrics = metrics
        self._app = config.application_id
        self._token = read_token(config)
        self._public_metrics = config.application_server_public_metrics
        self._max_limit = config.application_server_max_limit
        self._max_bytes = config.application_server_max_response_bytes
        self._seconds = to_millis(config.application_server_request_timeout) / 1000
        self.pins = PinnedVersions(to_millis(config.application_server_cursor_ttl) / 1000)
        host, port = server_address(config.application_server)
        if not _loopback(host) and self._token is None:
            log.warning("the query endpoint on %s serves every store to anyone who can reach it: "
                        "set application_server_auth_token (and application_server_tls)", host)
        self._server = PooledServer(
            host, port, _serve(self),
            config.application_server_threads, max(self._seconds, 1.0), tls_context(config.application_server_tls),
            on_disconnect=metrics.disconnects.inc,
            on_rejected=lambda reason: metrics.rejected.labels(self._app, reason).inc(),
            quick=_quick(self))

    @property
    def address(self) -> tuple[str, int]:
        """The bound ``(host, port)`` (the real port when the configured one was 0)."""
        return self._server.address

    def start(self) -> None:
        self._server.start()

    def stop(self) -> None:
        self._server.stop()

    # -- routing ---------------------------------------------------------------------------
    def handle(self, path: str, authorization: Optional[str] = None) -> tuple[int, str, bytes]:
        """``(status, content type, body)`` for a GET of ``path``."""
        url = urlsplit(path)
        parts = [unquote(p) for p in url.path.split("/") if p]
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()} if url.query else {}
        budget = Budget(self._max_bytes, self._seconds)
        if parts == ["metrics"]:
            if not self._public_metrics:
                self._authorize(authorization)
            return 200, CONTENT_TYPE, self.metrics.render()
        self._authorize(authorization)
        if not parts or parts[0] != "stores" or len(parts) > 3:
            raise HttpError(404, f"no such resource: {url.path}")
        if len(parts) == 1:
            stores = [{"name": d.name, "kind": d.kind.value}
                      for _, d in sorted(self.queries.topology.stores.items()) if d.queryable]
            return self._json(stores, budget)
        store = self._store_def(parts[1])
        if len(parts) == 2:
            return self._json(self._scan(store, query, budget), budget)
        key = self._key(parts[2], self._key_serde(store))
        return self._json(KEY_ROUTES[store.kind](self, store, key, parts[2], query, budget), budget)

    def point_lookup(self, request: Any) -> Optional[tuple[Any, str]]:
        """``(store, key as in the URL)`` when ``request`` is a GET of one key of a
        queryable key-value store with a changelog (one read of one key: little work),
        by its target alone; else ``None``. :meth:`lookup` answers it as :meth:`respond`
        would, without taking the URL apart again."""
        parts = request.target.split("/")
        if (request.method != b"GET" or len(parts) != 4 or parts[0] or parts[1] != "stores" or not parts[3]
                or "?" in parts[3] or "#" in parts[3]):
            return None
        store = self.queries.topology.stores.get(unquote(parts[2]))
        if store is None or store.kind is not StoreKind.KV or not store.logging or not store.queryable:
            return None
        return store, parts[3]

    def lookup(self, store: Any, text: str, authorization: Optional[str]) -> tuple[int, str, bytes, dict]:
        """:meth:`respond` to a GET of ``text``, a key of ``store`` as :meth:`point_lookup` found them."""
        return self._answer(self._lookup, store, text, authorization)

    def _lookup(self, store: Any, text: str, authorization: Optional[str]) -> tuple[int, str, bytes]:
        self._authorize(authorization)
        text = unquote(text)
        budget = Budget(self._max_bytes, self._seconds)
        return self._json(_get_key(self, store, self._key(text, self._key_serde(store)), text, {}, budget), budget)

    def _authorize(self, authorization: Optional[str]) -> None:
        if self._token is None:
            return
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self._token.encode()):
            return
        self.metrics.unauthorized.inc()
        raise HttpError(401, "a valid bearer token is required (Authorization: Bearer <token>)",
                        {"WWW-Authenticate": 'Bearer realm="streamlib"'})

    def _scan(self, store: Any, query: dict, budget: Budget) -> dict:
        """``GET /stores/<store>``: a page of a store's entries with keys from ``from`` to
        ``to`` (a window store's also with start from ``time_from`` to ``time_to``)."""
        serde = self._key_serde(store)
        lo, hi = (serde.serialize(self._key(query[b], serde)) if b in query else None for b in ("from", "to"))
        if store.kind is StoreKind.KV:
            _known(query, ("from", "to", "limit", "after"))
            return self.page(store, query, range_bounds(lo, hi), (None, None),
                             lambda view: ({"key": k, "value": v} for k, v in view.all()), budget,
                             upper_given="to" in query)
        times: tuple[Optional[int], Optional[int]] = (None, None)
        if store.kind is StoreKind.WINDOW:
            _known(query, ("from", "to", "time_from", "time_to", "limit", "after"))
            times = _times(query, None, None)
        else:
            _known(query, ("from", "to", "limit", "after"))
        given = any(p in query for p in ("from", "to", "time_from", "time_to"))
        layout = self.queries.store(store.name).layout
        every = prefix_bounds(layout.tag)
        return self.page(store, query, every, every, _windowed_entries(keyed=True), budget,
                         layout=layout, keys=KeyRange(lo, hi, *times) if given else None, keys_given=given)

    def page(self, store: Any, query: dict, bounds: Bounds, scope: Bounds,
             entries_of: Callable[[Any], Iterator[dict]], budget: Budget, upper_given: bool = False,
             layout: Any = None, keys: Optional[KeyRange] = None, keys_given: bool = False) -> dict:
        """One page (``limit``, ``after``) of ``store``'s entries within raw ``bounds``
        (and ``keys`` of a window or session store's ``layout``), as ``entries_of`` yields
        them from the typed query view over one page's reads. A cursor must lie within
        ``scope`` (what the URL alone names: the store, or one of its keys), end at
        ``bounds``' upper end when the URL gives that end, and read the same ``keys``
        when the URL gives them."""
        try:
            limit = int(query.get("limit", DEFAULT_LIMIT))
        except ValueError:
            raise HttpError(400, "limit must be an integer") from None
        if not 1 <= limit <= self._max_limit:
            raise HttpError(400, f"limit must be between 1 and {self._max_limit}")
        cursor = None
        if "after" in query:
            cursor = Cursor.decode(query["after"])
            if (cursor.store != store.name or not within(cursor.after, scope)
                    or not _ends_within(cursor.upper, scope) or (upper_given and bounds[1] != cursor.upper)
                    or (cursor.keys is not None and layout is None) or (keys_given and cursor.keys != keys)):
                raise HttpError(400, "the cursor belongs to another scan (store, key, range or upper bound differ)")
        config = self.queries.config
        return scan_page(lambda reads: entries_of(query_view(store, reads, config)),
                         self.queries.reads(store.name), self.pins, store.name, bounds, cursor, limit, budget,
                         layout, keys)

    def _store_def(self, name: str) -> Any:
        d = self.queries.topology.stores.get(name)
        if d is None or not d.queryable:
            raise HttpError(404, f"no store named {name!r}")
        return d

    def _key_serde(self, store: Any) -> Any:
        return store.key_serde or self.queries.config.default_key_serde

    @staticmethod
    def _key(text: str, serde: Any) -> Any:
        try:
            return decode_key(text, serde)
        except ValueError as exc:
            raise HttpError(400, f"bad key {text!r}: {exc}") from None

    @staticmethod
    def _json(body: Any, budget: Budget) -> tuple[int, str, bytes]:
        data = _ENCODER.encode(body).encode()
        budget.check(len(data))
        return 200, _JSON, data

    def respond(self, path: str, authorization: Optional[str]) -> tuple[int, str, bytes, dict]:
        """:meth:`handle`, with errors as JSON answers; counted and timed."""
        return self._answer(self.handle, path, authorization)

    def _answer(self, handler: Callable[..., tuple[int, str, bytes]], *args: Any) -> tuple[int, str, bytes, dict]:
        """``handler(*args)`` (the path, or the store and key, first), with errors as
        JSON answers; counted and timed."""
        started = time.perf_counter()
        headers: dict[str, str] = {}
        try:
            status, kind, body = handler(*args)
        except HttpError as exc:
            status, kind, body, headers = exc.status, _JSON, _error(exc), exc.headers
        except NotYetQueryable as exc:
            status, kind, body, headers = 503, _JSON, _error(exc), {"Retry-After": "1"}
        except Exception as exc:   # a query bug must not kill the endpoint
            log.exception("query endpoint failed on %s", args[0] if isinstance(args[0], str) else args[:2])
            status, kind, body = 500, _JSON, _error(exc)
        self.metrics.request_done(status, time.perf_counter() - started)
        return status, kind, body, headers


def _known(query: dict, names: tuple[str, ...]) -> None:
    unknown = set(query) - set(names)
    if unknown:
        raise HttpError(400, f"unknown parameters {sorted(unknown)}; use {', '.join(names)}")


def _ends_within(upper: Optional[bytes], scope: Bounds) -> bool:
    """Whether a scan ending before ``upper`` (``None``: open) stays within ``scope``."""
    return scope[1] is None or (upper is not None and upper <= scope[1])


def _windowed_entries(keyed: bool) -> Callable[[Any], Iterator[dict]]:
    """The JSON entries of a window or session view's stored entries (with their key
    when a page spans keys)."""
    def entries_of(view: Any) -> Iterator[dict]:
        for windowed, value in view.stored():
            entry = {"start": windowed.window.start, "end": windowed.window.end, "value": value}
            yield {"key": windowed.key, **entry} if keyed else entry
    return entries_of


# -- GET /stores/<store>/<key>, one route per store kind ----------------------------------------
def _get_key(server: QueryServer, store: Any, key: Any, text: str, query: dict, budget: Budget) -> dict:
    if query:
        raise HttpError(400, f"unknown parameters {sorted(query)} for a key-value store")
    value = server.queries.store(store.name).get(key)
    if value is None:
        raise HttpError(404, f"key {text!r} not found in store {store.name!r}")
    return {"key": key, "value": value}


def _times(query: dict, time_from: Optional[int], time_to: Optional[int]) -> tuple[Optional[int], Optional[int]]:
    """``time_from`` and ``time_to`` (ms, inclusive) of the URL, the defaults if not given."""
    try:
        times = (int(query["time_from"]) if "time_from" in query else time_from,
                 int(query["time_to"]) if "time_to" in query else time_to)
    except ValueError:
        raise HttpError(400, "time_from and time_to must be integers (ms)") from None
    if None not in times and times[0] > times[1]:
        raise HttpError(400, "time_from must not be after time_to")
    return times


def _fetch_windows(server: QueryServer, store: Any, key: Any, text: str, query: dict, budget: Budget) -> dict:
    """A page of the key's windows with start in ``[time_from, time_to]``, by start."""
    _known(query, ("time_from", "time_to", "limit", "after"))
    return _key_page(server, store, key, query, budget, _times(query, 0, _MAX_TIME), "time_to" in query)


def _fetch_sessions(server: QueryServer, store: Any, key: Any, text: str, query: dict, budget: Budget) -> dict:
    """A page of the key's sessions, by end then start."""
    _known(query, ("limit", "after"))
    return _key_page(server, store, key, query, budget, (None, None), False)


def _key_page(server: QueryServer, store: Any, key: Any, query: dict, budget: Budget,
              times: tuple[Optional[int], Optional[int]], upper_given: bool) -> dict:
    layout = server.queries.store(store.name).layout
    kb = server._key_serde(store).serialize(key)
    return server.page(store, query, layout.key_bounds(kb, *times), layout.key_bounds(kb),
                       _windowed_entries(keyed=False), budget, upper_given)


#: what a key's URL answers for each queryable store kind: (server, store def, decoded
#: key, key as in the URL, URL parameters, the request's budget) -> the JSON body
KEY_ROUTES: dict[StoreKind, Callable[[QueryServer, Any, Any, str, dict, Budget], Any]] = {
    StoreKind.KV: _get_key, StoreKind.WINDOW: _fetch_windows, StoreKind.SESSION: _fetch_sessions,
}


def _error(exc: BaseException) -> bytes:
    return json.dumps({"error": str(exc)}).encode()


def _quick(server: QueryServer) -> Callable[[Any], bool]:
    """Answers a plain connection's point lookups on the thread that saw their bytes
    arrive (:data:`.server.Quick`): one key's read is little work, and handing it to a
    worker costs a thread wake-up and the GIL changing hands. ``False`` (a worker takes
    the connection on): another kind of request, one not complete yet, an answer the
    socket did not take whole, or more than :data:`QUICK_REQUESTS` pipelined."""
    def quick(conn: Any) -> bool:
        if conn.reader is None:
            conn.reader = RequestReader()
        reader = conn.reader
        conn.keep_alive = reader.read_now(conn)
        if not conn.keep_alive:   # closed between requests
            return True
        for _ in range(QUICK_REQUESTS):
            if not reader.requests:
                return not reader.started
            request = reader.requests[0]
            route = server.point_lookup(request)
            if route is None:
                return False
            reader.requests.popleft()
            status, kind, body, headers = server.lookup(*route, request.authorization)
            conn.keep_alive = request.keep_alive
            _logged(conn, request, status)
            if not conn.send_now(response(status, kind, body, headers, not request.keep_alive)):
                return False
            if not conn.keep_alive:
                return True
        return not reader.requests and not reader.started
    return quick


def _logged(conn: Any, request: Any, status: int) -> None:
    if log.isEnabledFor(logging.DEBUG):   # each answer: not formatted unless logged
        log.debug("http: %s %s %s %d", conn.address, request.method.decode(), request.target, status)


def _serve(server: QueryServer) -> Callable[[Any, bool], None]:
    """Serves a connection's next request (``busy``: 503 without reading a store, the
    worker pool is full), parsed by :mod:`.protocol`."""
    def serve(conn: Any, busy: bool) -> None:
        if conn.reader is None:
            conn.reader = RequestReader()
        timeout = conn.sock.gettimeout()
        try:
            request = conn.reader.next(conn.sock, timeout)
        except BadRequest as exc:
            conn.sock.sendall(response(exc.status, _JSON, _error(exc), {}, True))
            return
        except TimeoutError:   # as http.server: closed without an answer
            log.debug("query endpoint: %s sent no complete request in %.0f s", conn.address, timeout)
            return
        if request is None:   # closed between requests
            return
        close = busy or not request.keep_alive
        if busy:
            server.metrics.rejected.labels(server._app, "busy").inc()
            status, kind, body = 503, _JSON, _error(RuntimeError("the query endpoint is busy; retry later"))
            headers = {"Retry-After": "1"}
        elif request.method != b"GET":
            status, kind, body, headers = 501, _JSON, _error(RuntimeError(f"unsupported method {request.method!r}")), {}
        else:
            status, kind, body, headers = server.respond(request.target, request.authorization)
        conn.sock.sendall(response(status, kind, body, headers, close))
        conn.keep_alive = not close
        _logged(conn, request, status)
    return serve

"""The JSON HTTP endpoint for interactive queries (``StreamsConfig(application_server=...)``).

Routes (API.md): ``GET /stores`` (names and kinds), ``GET /stores/<store>/<key>``
(``{"key", "value"}``; window stores with ``?time_from=&time_to=``: a list of
``{"start", "end", "value"}``; session stores: the key's sessions), ``GET
/stores/<store>?from=a&to=m`` (entries, both bounds inclusive, either optional),
``GET /metrics`` (Prometheus' text format). 404: unknown route, store or key; 400: bad
parameters; 503: the store is not queryable yet. Keys in URLs are text, decoded with
the store's key serde (string, long, integer, double, bytes as UTF-8, json).
"""
from __future__ import annotations

import base64
import json
import logging
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, unquote, urlsplit

from streamlib.query.reads import NotYetQueryable

log = logging.getLogger("streamlib.query")
_MAX_TIME = (1 << 63) - 1


class HttpError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def parse_address(address: str) -> tuple[str, int]:
    """``"host:port"`` -> ``(host, port)``.

    >>> parse_address("127.0.0.1:8080")
    ('127.0.0.1', 8080)
    """
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"application_server must be 'host:port', got {address!r}")
    return host.strip("[]"), int(port)


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


def prometheus_text(metrics: dict, application_id: str) -> str:
    """``app.metrics()`` in Prometheus' text exposition format (numbers only).

    >>> print(prometheus_text({"records_in": 3, "store_sizes": {"c": 2}}, "a"), end="")
    # TYPE streamlib_records_in gauge
    streamlib_records_in{application="a"} 3
    # TYPE streamlib_store_sizes gauge
    streamlib_store_sizes{application="a",key="c"} 2
    """
    samples: dict[str, list[str]] = {}
    app = f'application="{_escape(application_id)}"'

    def emit(name: str, labels: str, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                (isinstance(value, float) and math.isnan(value)):
            return
        samples.setdefault(f"streamlib_{name}", []).append(f"streamlib_{name}{{{labels}}} {value}")

    for name, value in sorted(metrics.items()):
        if name == "tasks" and isinstance(value, dict):
            for task, counters in sorted(value.items()):
                for counter, number in sorted(counters.items()):
                    emit(f"task_{counter}", f'{app},task="{_escape(task)}"', number)
        elif name == "lag" and isinstance(value, dict):
            for topic, parts in sorted(value.items()):
                for partition, number in sorted(parts.items()):
                    emit("lag", f'{app},topic="{_escape(topic)}",partition="{partition}"', number)
        elif isinstance(value, dict):
            for key, number in sorted(value.items()):
                emit(name, f'{app},key="{_escape(str(key))}"', number)
        else:
            emit(name, app, value)
    lines = []
    for metric, block in samples.items():   # one TYPE line before each metric's samples
        lines.append(f"# TYPE {metric} gauge")
        lines.extend(block)
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class QueryServer:
    """A threaded HTTP server over an application's :class:`~streamlib.query.service.Queries`."""

    def __init__(self, address: str, queries: Any, metrics: Callable[[], dict]):
        self.queries = queries
        self.metrics = metrics
        host, port = parse_address(address)
        self._server = ThreadingHTTPServer((host, port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="streamlib-http",
                                        daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        """The bound ``(host, port)`` (the real port when the configured one was 0)."""
        return self._server.server_address[:2]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    # -- routing ---------------------------------------------------------------------------
    def handle(self, path: str) -> tuple[int, str, str]:
        """``(status, content type, body)`` for a GET of ``path``."""
        url = urlsplit(path)
        parts = [unquote(p) for p in url.path.split("/") if p]
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        if parts == ["metrics"]:
            text = prometheus_text(self.metrics(), self.queries.config.application_id)
            return 200, "text/plain; version=0.0.4; charset=utf-8", text
        if not parts or parts[0] != "stores" or len(parts) > 3:
            raise HttpError(404, f"no such resource: {url.path}")
        if len(parts) == 1:
            stores = [{"name": d.name, "kind": d.kind} for _, d in sorted(self.queries.topology.stores.items())
                      if d.queryable]
            return self._json(stores)
        store = self._store_def(parts[1])
        view = self.queries.store(store.name)
        key_serde = store.key_serde or self.queries.config.default_key_serde
        if len(parts) == 2:
            unknown = set(query) - {"from", "to"}
            if unknown:
                raise HttpError(400, f"unknown parameters {sorted(unknown)}; use from and to")
            lo, hi = (self._key(query[b], key_serde) if b in query else None for b in ("from", "to"))
            return self._json([{"key": k, "value": v} for k, v in view.range(lo, hi)])
        key = self._key(parts[2], key_serde)
        if store.kind == "window":
            return self._json(self._window_fetch(store, view, key, query))
        if store.kind == "session":
            return self._json([{"start": w.window.start, "end": w.window.end, "value": v}
                               for w, v in view.fetch_sessions(key)])
        if query:
            raise HttpError(400, f"unknown parameters {sorted(query)} for a key-value store")
        value = view.get(key)
        if value is None:
            raise HttpError(404, f"key {parts[2]!r} not found in store {store.name!r}")
        return self._json({"key": key, "value": value})

    def _window_fetch(self, store: Any, view: Any, key: Any, query: dict) -> list[dict]:
        unknown = set(query) - {"time_from", "time_to"}
        if unknown:
            raise HttpError(400, f"unknown parameters {sorted(unknown)}; use time_from and time_to")
        try:
            time_from = int(query.get("time_from", 0))
            time_to = int(query.get("time_to", _MAX_TIME))
        except ValueError:
            raise HttpError(400, "time_from and time_to must be integers (ms)") from None
        if time_from > time_to:
            raise HttpError(400, "time_from must not be after time_to")
        return [{"start": start, "end": start + store.window_size_ms, "value": value}
                for start, value in view.fetch(key, time_from, time_to)]

    def _store_def(self, name: str) -> Any:
        d = self.queries.topology.stores.get(name)
        if d is None or not d.queryable:
            raise HttpError(404, f"no store named {name!r}")
        return d

    @staticmethod
    def _key(text: str, serde: Any) -> Any:
        try:
            return decode_key(text, serde)
        except ValueError as exc:
            raise HttpError(400, f"bad key {text!r}: {exc}") from None

    @staticmethod
    def _json(body: Any) -> tuple[int, str, str]:
        return 200, "application/json", json.dumps(body, default=_json_default)

    def _handler(self) -> type:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                try:
                    status, kind, body = server.handle(self.path)
                except HttpError as exc:
                    status, kind, body = exc.status, "application/json", json.dumps({"error": str(exc)})
                except NotYetQueryable as exc:
                    status, kind, body = 503, "application/json", json.dumps({"error": str(exc)})
                except Exception as exc:   # a query bug must not kill the endpoint
                    log.exception("query endpoint failed on %s", self.path)
                    status, kind, body = 500, "application/json", json.dumps({"error": str(exc)})
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, fmt: str, *args: Any) -> None:
                log.debug("http: " + fmt, *args)

        return Handler

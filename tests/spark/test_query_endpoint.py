"""The query endpoint without Spark: a store's changelog written here, its replicas
followed by Queries as Streams would, HTTP through the real server.

Pages pinned to one batch, budgets, the bounded pool, bearer tokens, TLS, quiet
disconnects and the Prometheus metrics."""
from __future__ import annotations

import json
import logging
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time
import urllib.error
import urllib.request
from datetime import timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from streamlib import Consumed, Materialized, Serdes, SessionWindows, StreamsBuilder, StreamsConfig, TimeWindows
from streamlib.processors.stores.layout import SESSIONS, WINDOWS
from streamlib.query.service import Queries
from streamlib.state.changelog import Changelog
from streamlib.state.timestamped import encode_timestamped
from streamlib.topics import open_backend

S = Serdes.string()
PARTITIONS = 2
WINDOW_MS = 100


def _topology(store: str):
    """A count materialized as ``store``: "counts" (key-value), "windows" (100 ms
    tumbling windows) or "sessions"."""
    builder = StreamsBuilder()
    grouped = builder.stream("events", consumed=Consumed.with_(S, S)).group_by_key()
    if store == "windows":
        grouped = grouped.windowed_by(TimeWindows.of(timedelta(milliseconds=WINDOW_MS)))
    elif store == "sessions":
        grouped = grouped.windowed_by(SessionWindows.with_inactivity_gap(timedelta(seconds=1)))
    grouped.count(materialized=Materialized.as_(store))
    return builder.build()


class Endpoint:
    """A store ("counts" unless told) with a changelog of PARTITIONS partitions, served over HTTP."""

    def __init__(self, tmp_path, store="counts", **server):
        self.tmp_path = tmp_path
        self.store = store
        topic = f"app-{store}-changelog"
        bootstrap = f"local://{tmp_path / 'log'}"
        self.backend = open_backend(bootstrap)
        self.backend.create_topic(topic, PARTITIONS, {"cleanup.policy": "compact"})
        self.logs = [Changelog(self.backend, topic, p, PARTITIONS, f"test/{p}") for p in range(PARTITIONS)]
        server.setdefault("application_server", "127.0.0.1:0")
        self.config = StreamsConfig(application_id="app", bootstrap=bootstrap,
                                    state_dir=str(tmp_path / "state"), **server)
        self.queries = Queries(_topology(store), self.config, lambda: self.backend)
        self.snapshot = {"records_in": 0, "tasks": {}}
        self.queries.starting(lambda: self.snapshot)
        host, port = self.queries.server.address
        scheme = "https" if self.config.application_server_tls else "http"
        self.base = f"{scheme}://{host}:{port}"
        self.port = port

    def commit(self, batch: int, counts: dict[str, int | None]) -> None:
        """One committed batch writing these counts (None: deleted), published when this returns."""
        self.commit_entries(batch, {k: [(k.encode(), _count(v))] for k, v in counts.items()})

    def commit_entries(self, batch: int, entries: dict[str, list[tuple[bytes, bytes | None]]]) -> None:
        """One committed batch writing each key's raw store entries, published when this returns."""
        reports = {}
        for partition in range(PARTITIONS):
            pairs = [pair for k in entries if hash(k) % PARTITIONS == partition for pair in entries[k]]
            _, end = self.logs[partition].append(batch, [k for k, _ in pairs], [v for _, v in pairs],
                                                 [0] * len(pairs))
            reports[f"0_{partition}"] = {"changelog_offsets": {self.store: end}}
        self.queries.committed(batch, reports)
        deadline = time.monotonic() + 30
        while (self.queries.replicas.published is None or self.queries.replicas.published.batch != batch):
            assert time.monotonic() < deadline, "batch not published"
            time.sleep(0.01)

    def get(self, path: str, token: str | None = None, context: ssl.SSLContext | None = None):
        request = urllib.request.Request(self.base + path)
        if token is not None:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=20, context=context) as response:
                body = response.read().decode()
                return response.status, _parsed(body, response.headers), response.headers
        except urllib.error.HTTPError as exc:
            return exc.code, _parsed(exc.read().decode(), exc.headers), exc.headers

    def close(self):
        self.queries.close()


def _count(value: int | None) -> bytes | None:
    return None if value is None else encode_timestamped(struct.pack(">q", value), 0)


def _parsed(body, headers):
    return json.loads(body) if "json" in headers["Content-Type"] else body


@pytest.fixture
def endpoint(tmp_path):
    made = []

    def make(store="counts", **server):
        made.append(Endpoint(tmp_path / str(len(made)), store, **server))
        return made[-1]

    yield make
    for e in made:
        e.close()


def _key(i: int) -> str:
    return f"k{i:05d}"


def test_pages_of_a_scan_read_the_batch_the_first_page_read(endpoint):
    e = endpoint(application_server_cursor_ttl=timedelta(seconds=60))
    e.commit(0, {_key(i): 1 for i in range(2500)})
    status, page, _ = e.get("/stores/counts?limit=1000")
    assert status == 200 and len(page["entries"]) == 1000 and page["next"]
    assert page["entries"][0] == {"key": _key(0), "value": 1}
    # batch 1 changes every key, deletes some and adds others: the cursor keeps batch 0
    e.commit(1, {**{_key(i): 2 for i in range(0, 2500, 2)}, **{_key(i): None for i in range(1, 2500, 10)},
                 **{_key(i): 2 for i in range(2500, 2600)}})
    entries = page["entries"]
    while page["next"]:
        status, page, _ = e.get(f"/stores/counts?limit=1000&after={page['next']}")
        assert status == 200
        entries += page["entries"]
    assert entries == [{"key": _key(i), "value": 1} for i in range(2500)]
    # a new scan reads batch 1, bounds inclusive; the default limit is 1000
    status, page, _ = e.get(f"/stores/counts?from={_key(10)}&to={_key(13)}")
    assert page == {"entries": [{"key": _key(10), "value": 2}, {"key": _key(12), "value": 2},
                                {"key": _key(13), "value": 1}], "next": None}
    assert len(e.get("/stores/counts")[1]["entries"]) == 1000


def test_a_cursor_expires_once_its_batch_is_no_longer_held(endpoint):
    e = endpoint(application_server_cursor_ttl=timedelta(milliseconds=1))
    e.commit(0, {_key(i): 1 for i in range(10)})
    _, page, _ = e.get("/stores/counts?limit=4")
    time.sleep(0.01)
    status, _, _ = e.get(f"/stores/counts?limit=4&after={page['next']}")
    assert status == 200   # still the published batch: readable
    e.commit(1, {_key(0): 5})
    time.sleep(0.01)
    status, body, _ = e.get(f"/stores/counts?limit=4&after={page['next']}")
    assert status == 410 and "expired" in body["error"]
    assert e.get("/stores/counts?after=garbage!")[0] == 400
    assert e.get("/stores/counts?limit=0")[0] == 400
    assert e.get("/stores/counts?limit=10001")[0] == 400


def _entries(layout, key: str, slot: tuple[int, ...], count: int | None) -> list[tuple[bytes, bytes | None]]:
    """The raw entries of one window or session of ``key`` (data and time index; None: deleted)."""
    kb = key.encode()
    return [(layout.data_key(kb, slot), _count(count)), (layout.index_key(kb, slot), None if count is None else b"")]


def _window(key: str, start: int, count: int | None) -> list[tuple[bytes, bytes | None]]:
    return _entries(WINDOWS, key, (start,), count)


def _session(key: str, start: int, end: int, count: int | None) -> list[tuple[bytes, bytes | None]]:
    return _entries(SESSIONS, key, (end, start), count)


def _windows(keys, starts, count) -> dict[str, list]:
    return {k: [e for start in starts for e in _window(k, start, count)] for k in keys}


def _pages(e, path: str, first: dict) -> list[dict]:
    """Every entry from ``first`` on, following its cursors."""
    entries, page = list(first["entries"]), first
    while page["next"]:
        status, page, _ = e.get(f"{path}{'&' if '?' in path else '?'}after={page['next']}")
        assert status == 200, page
        entries += page["entries"]
    return entries


def test_a_keys_windows_are_pages_that_read_the_batch_the_first_page_read(endpoint):
    e = endpoint("windows")
    e.commit_entries(0, _windows(["a", "b"], range(0, 2500, WINDOW_MS), 1))
    status, page, _ = e.get("/stores/windows/a?time_from=200&time_to=1900&limit=5")
    assert status == 200 and len(page["entries"]) == 5 and page["next"]
    assert page["entries"][0] == {"start": 200, "end": 300, "value": 1}
    # batch 1 changes every window of "a", deletes some and adds later ones: the cursor keeps batch 0
    e.commit_entries(1, {"a": [*_windows(["a"], range(0, 2500, 2 * WINDOW_MS), 2)["a"],
                               *_windows(["a"], range(300, 2500, 1000), None)["a"],
                               *_windows(["a"], range(2500, 3000, WINDOW_MS), 2)["a"]]})
    assert _pages(e, "/stores/windows/a?limit=5", page) == [
        {"start": t, "end": t + WINDOW_MS, "value": 1} for t in range(200, 2000, WINDOW_MS)]
    # a new fetch reads batch 1; the default limit is 1000, the time range inclusive
    status, page, _ = e.get("/stores/windows/a?time_from=200&time_to=400")
    assert page == {"entries": [{"start": 200, "end": 300, "value": 2}, {"start": 400, "end": 500, "value": 2}],
                    "next": None}
    assert len(e.get("/stores/windows/a")[1]["entries"]) == 25 + 5 - 3   # new ones, deleted ones
    # a cursor continues only its own key and time range
    _, page, _ = e.get("/stores/windows/a?limit=2")
    assert e.get(f"/stores/windows/b?after={page['next']}")[0] == 400
    assert e.get(f"/stores/windows/a?time_to=500&after={page['next']}")[0] == 400
    assert e.get(f"/stores/windows/a?after={page['next']}")[0] == 200
    assert e.get("/stores/windows/a?time_from=5&time_to=1")[0] == 400
    assert e.get("/stores/windows/a?from=a")[0] == 400


def test_a_window_store_scan_is_paged_in_one_batch_instead_of_refused(endpoint):
    e = endpoint("windows", application_server_cursor_ttl=timedelta(seconds=60))
    keys = [_key(i) for i in range(30)]
    e.commit_entries(0, _windows(keys, (0, WINDOW_MS), 1))
    status, page, _ = e.get("/stores/windows?limit=7")
    assert status == 200 and len(page["entries"]) == 7
    assert page["entries"][:3] == [{"key": _key(0), "start": 0, "end": WINDOW_MS, "value": 1},
                                   {"key": _key(0), "start": WINDOW_MS, "end": 2 * WINDOW_MS, "value": 1},
                                   {"key": _key(1), "start": 0, "end": WINDOW_MS, "value": 1}]
    deleted = set(keys[10:20])
    e.commit_entries(1, {k: _window(k, 0, 3) + (_window(k, WINDOW_MS, None) if k in deleted else [])
                         for k in [*keys, "k99999"]})
    assert _pages(e, "/stores/windows?limit=7", page) == [
        {"key": k, "start": t, "end": t + WINDOW_MS, "value": 1} for k in keys for t in (0, WINDOW_MS)]
    entries = _pages(e, "/stores/windows?limit=7", e.get("/stores/windows?limit=7")[1])
    assert len(entries) == 30 + 20 + 1 and {x["value"] for x in entries if x["start"] == 0} == {3}


#: keys of different lengths, prefixes of each other: in ["ab", "b"] by bytes are ab, abc, abcdef, b
RANGE_KEYS = ["a", "aa", "ab", "abc", "b", "b0", "ba", "bb", "c", "abcdef"]


def _windowed(keys, starts, value) -> list[dict]:
    """Entries of a window store scan: per key (stored order: by length, then bytes), per start."""
    ordered = sorted(keys, key=lambda k: (len(k), k))
    return [{"key": k, "start": t, "end": t + WINDOW_MS, "value": value} for k in ordered for t in starts]


def test_window_key_ranges_are_the_keys_between_the_bounds_paged_in_one_batch(endpoint):
    e = endpoint("windows", application_server_cursor_ttl=timedelta(seconds=60))
    starts = (0, WINDOW_MS, 2 * WINDOW_MS)
    e.commit_entries(0, _windows(RANGE_KEYS, starts, 1))
    status, page, _ = e.get("/stores/windows?from=ab&to=b&limit=2")
    assert status == 200 and page["entries"] == _windowed(["b"], starts, 1)[:2]
    # batch 1 changes every window, deletes the key "abc"'s and adds "abd" in the range
    e.commit_entries(1, {**_windows(RANGE_KEYS, starts, 2), **_windows(["abc"], starts, None),
                         **_windows(["abd"], starts, 2)})
    assert _pages(e, "/stores/windows?limit=2", page) == _windowed(["ab", "abc", "abcdef", "b"], starts, 1)
    # a new scan reads batch 1; time_from/time_to select window starts, both inclusive
    _, page, _ = e.get("/stores/windows?from=ab&to=b")
    assert page == {"entries": _windowed(["ab", "abd", "abcdef", "b"], starts, 2), "next": None}
    _, page, _ = e.get(f"/stores/windows?from=ab&to=b&time_from={WINDOW_MS}&time_to={WINDOW_MS}")
    assert page["entries"] == _windowed(["ab", "abd", "abcdef", "b"], [WINDOW_MS], 2)
    _, page, _ = e.get("/stores/windows?from=b&limit=1000")   # to open: up to the largest
    assert page["entries"] == _windowed(["b", "c", "b0", "ba", "bb"], starts, 2)
    _, page, _ = e.get("/stores/windows?to=aa")
    assert page["entries"] == _windowed(["a", "aa"], starts, 2)
    assert e.get("/stores/windows?from=c&to=b")[1] == {"entries": [], "next": None}
    # a cursor continues its own range only
    _, page, _ = e.get("/stores/windows?from=ab&to=b&limit=4")
    assert e.get(f"/stores/windows?from=ab&to=b&after={page['next']}")[0] == 200
    assert e.get(f"/stores/windows?from=a&to=b&after={page['next']}")[0] == 400
    assert e.get(f"/stores/windows?from=ab&to=b&time_to=5&after={page['next']}")[0] == 400
    assert e.get(f"/stores/windows/b?after={page['next']}")[0] == 400
    assert e.get("/stores/windows?time_from=9&time_to=1")[0] == 400


def test_session_key_ranges_are_the_keys_between_the_bounds_paged_in_one_batch(endpoint):
    e = endpoint("sessions", application_server_cursor_ttl=timedelta(seconds=60))
    e.commit_entries(0, {k: _session(k, 0, 10, 1) + _session(k, 100, 150, 1) for k in RANGE_KEYS})
    status, page, _ = e.get("/stores/sessions?from=ab&to=b&limit=3")
    assert status == 200 and page["entries"] == [{"key": "b", "start": 0, "end": 10, "value": 1},
                                                 {"key": "b", "start": 100, "end": 150, "value": 1},
                                                 {"key": "ab", "start": 0, "end": 10, "value": 1}]
    e.commit_entries(1, {"ab": _session("ab", 100, 150, None), "abc": _session("abc", 0, 10, 5)})
    entries = _pages(e, "/stores/sessions?limit=3", page)
    assert [(x["key"], x["start"]) for x in entries] == [("b", 0), ("b", 100), ("ab", 0), ("ab", 100),
                                                         ("abc", 0), ("abc", 100), ("abcdef", 0), ("abcdef", 100)]
    assert {x["value"] for x in entries} == {1}
    _, page, _ = e.get("/stores/sessions?from=ab&to=b")
    assert [(x["key"], x["start"], x["value"]) for x in page["entries"]] == [
        ("b", 0, 1), ("b", 100, 1), ("ab", 0, 1), ("abc", 0, 5), ("abc", 100, 1), ("abcdef", 0, 1),
        ("abcdef", 100, 1)]
    assert e.get("/stores/sessions?from=a&time_from=0")[0] == 400   # sessions: keys only


def test_sessions_are_pages_a_cursor_expires_and_budgets_hold(endpoint):
    e = endpoint("sessions", application_server_cursor_ttl=timedelta(milliseconds=1),
                 application_server_max_response_bytes=300)
    e.commit_entries(0, {"a": [x for t in range(0, 10_000, 1000) for x in _session("a", t, t + 10, 1)],
                         "b": _session("b", 0, 5, 4)})
    status, page, _ = e.get("/stores/sessions/a?limit=4")
    assert status == 200 and page["entries"][0] == {"start": 0, "end": 10, "value": 1}
    assert _pages(e, "/stores/sessions/a?limit=4", page) == [
        {"start": t, "end": t + 10, "value": 1} for t in range(0, 10_000, 1000)]
    _, page, _ = e.get("/stores/sessions?limit=4")
    assert page["entries"][0] == {"key": "a", "start": 0, "end": 10, "value": 1}
    e.commit_entries(1, {"b": _session("b", 0, 5, None)})
    time.sleep(0.01)
    status, body, _ = e.get(f"/stores/sessions?limit=4&after={page['next']}")
    assert status == 410 and "expired" in body["error"]
    assert e.get("/stores/sessions/b")[1] == {"entries": [], "next": None}
    status, body, _ = e.get("/stores/sessions/a?limit=10")
    assert status == 413 and "300 bytes" in body["error"]
    assert e.get("/stores/sessions/a?time_from=0")[0] == 400


def test_budgets_answer_413_and_503_with_reasons(endpoint):
    e = endpoint(application_server_max_response_bytes=2000)
    e.commit(0, {_key(i): 1 for i in range(500)})
    status, body, _ = e.get("/stores/counts?limit=500")
    assert status == 413 and "2000 bytes" in body["error"]
    assert e.get("/stores/counts?limit=20")[0] == 200
    slow = endpoint(application_server_request_timeout=0)
    slow.commit(0, {_key(i): 1 for i in range(100)})
    status, body, headers = slow.get("/stores/counts?limit=100")
    assert status == 503 and "longer than" in body["error"] and headers["Retry-After"] == "1"


def test_a_full_pool_answers_503_with_retry_after(endpoint):
    e = endpoint(application_server_threads=1)
    e.commit(0, {_key(0): 1})
    pool = e.queries.server._server
    stuck = socket.create_connection(("127.0.0.1", e.port))
    stuck.sendall(b"GET /stores HTTP/1.1\r\n")   # the one worker waits for the rest
    _wait(lambda: pool._jobs.qsize() == 0)
    time.sleep(0.2)
    queued = []
    for _ in range(16):   # the queue holds 16 per thread
        s = socket.create_connection(("127.0.0.1", e.port))
        s.sendall(b"GET /stores HTTP/1.0\r\n\r\n")
        queued.append(s)
    _wait(lambda: pool._jobs.qsize() == 16)
    status, body, headers = e.get("/stores")
    assert status == 503 and headers["Retry-After"] == "1" and "busy" in body["error"]
    stuck.sendall(b"\r\n")
    for s in queued:   # every queued request is served once the worker is free
        assert s.makefile("rb").readline().startswith(b"HTTP/1.1 200")
        s.close()
    stuck.close()
    metrics = e.get("/metrics")[1]
    assert 'streamlib_query_rejected_total{application="app",reason="busy"} 1.0' in metrics


def test_point_lookups_are_answered_while_every_worker_is_busy(endpoint):
    import http.client

    e = endpoint(application_server_threads=1, application_server_request_timeout=timedelta(seconds=60))
    e.commit(0, {_key(0): 4})
    pool = e.queries.server._server
    serving, serve = threading.Event(), pool._serve
    pool._serve = lambda conn, rejected: (serving.set(), serve(conn, rejected))
    stuck = socket.create_connection(("127.0.0.1", e.port))
    stuck.sendall(b"GET /stores HTTP/1.1\r\n")   # the one worker waits for the rest
    assert serving.wait(10)
    lookup = http.client.HTTPConnection("127.0.0.1", e.port, timeout=5)
    for _ in range(2):   # kept alive, and a new connection
        lookup.request("GET", f"/stores/counts/{_key(0)}")
        response = lookup.getresponse()
        assert (response.status, json.loads(response.read())) == (200, {"key": _key(0), "value": 4})
    lookup.close()
    lookup.request("GET", f"/stores/counts/{_key(1)}")
    assert lookup.getresponse().status == 404
    stuck.sendall(b"\r\n")
    assert stuck.makefile("rb").readline().startswith(b"HTTP/1.1 200")
    stuck.close()


def test_bearer_token_401_without_200_with_and_metrics_public_when_asked(endpoint, tmp_path):
    e = endpoint(application_server_auth_token="s3cret")
    e.commit(0, {_key(0): 7})
    status, body, headers = e.get(f"/stores/counts/{_key(0)}")
    assert status == 401 and headers["WWW-Authenticate"].startswith("Bearer")
    assert e.get(f"/stores/counts/{_key(0)}", token="wrong")[0] == 401
    assert e.get(f"/stores/counts/{_key(0)}", token="s3cret")[:2] == (200, {"key": _key(0), "value": 7})
    assert e.get("/metrics")[0] == 401
    text = e.get("/metrics", token="s3cret")[1]
    assert 'streamlib_query_unauthorized_total{application="app"} 3.0' in text
    token_file = tmp_path / "token"
    token_file.write_text("from-a-file\n")
    f = endpoint(application_server_auth_token_file=str(token_file), application_server_public_metrics=True)
    f.commit(0, {_key(0): 1})
    assert f.get("/stores")[0] == 401
    assert f.get("/stores", token="from-a-file")[0] == 200
    assert f.get("/metrics")[0] == 200


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls_handshake_with_a_test_certificate(endpoint, tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    e = endpoint(application_server_tls=(str(cert), str(key)), application_server_auth_token="t")
    e.commit(0, {_key(1): 3})
    trusted = ssl.create_default_context(cafile=str(cert))
    assert e.get(f"/stores/counts/{_key(1)}", token="t", context=trusted)[:2] == (200, {"key": _key(1), "value": 3})
    with pytest.raises(urllib.error.URLError):   # a client that does not trust the certificate
        e.get("/stores", token="t", context=ssl.create_default_context())
    with pytest.raises((urllib.error.URLError, ConnectionError, http_errors())):   # plain HTTP gets no answer
        urllib.request.urlopen(f"http://127.0.0.1:{e.port}/stores", timeout=10).read()
    assert e.get("/stores", token="t", context=trusted)[0] == 200   # and the endpoint still serves
    import http.client

    kept = http.client.HTTPSConnection("127.0.0.1", e.port, timeout=10, context=trusted)
    for _ in range(3):   # keep-alive over TLS
        kept.request("GET", f"/stores/counts/{_key(1)}", headers={"Authorization": "Bearer t"})
        assert json.loads(kept.getresponse().read()) == {"key": _key(1), "value": 3}
    kept.close()
    assert 'reason="tls"' in e.get("/metrics", token="t", context=trusted)[1]


def http_errors():
    import http.client
    return http.client.HTTPException


def test_clients_that_go_away_are_counted_without_tracebacks(endpoint, capfd, caplog):
    e = endpoint()
    e.commit(0, {_key(i): 1 for i in range(3000)})
    caplog.set_level(logging.WARNING, logger="streamlib")
    for _ in range(50):
        s = socket.create_connection(("127.0.0.1", e.port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))   # reset on close
        s.sendall(b"GET /stores/counts?limit=3000 HTTP/1.0\r\n\r\n")
        s.close()
    for _ in range(20):   # half-open: connected, never a request
        socket.create_connection(("127.0.0.1", e.port)).close()
    _wait(lambda: e.queries.metrics.disconnects._value.get() >= 1)
    assert e.get(f"/stores/counts/{_key(5)}")[:2] == (200, {"key": _key(5), "value": 1})
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "Error" not in err
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_idle_connections_hold_no_worker(endpoint):
    e = endpoint(application_server_threads=1, application_server_request_timeout=timedelta(seconds=60))
    e.commit(0, {_key(0): 1})
    idle = [socket.create_connection(("127.0.0.1", e.port)) for _ in range(200)]
    assert e.get(f"/stores/counts/{_key(0)}")[:2] == (200, {"key": _key(0), "value": 1})
    for s in idle:
        s.close()


def test_metrics_parse_with_prometheus_client_counters_gauges_histograms(endpoint):
    e = endpoint()
    e.snapshot = {"records_in": 12, "records_out": 3, "dropped_records": 1, "stream_time": 5000,
                  "watermark": 4000, "last_batch": 2, "lag": {"events": {0: 4, 1: 0}},
                  "tasks": {"0_0": {"stream_time": 5000, "stores": {"counts": 6}},
                            "0_1": {"stream_time": 4000, "stores": {"counts": 5}}}}
    e.queries.pass_ran({"0_0": {"records_in": 7, "stream_time": 5000}, "0_1": {"records_in": 5}})
    e.queries.pass_ran({"0_0": {"records_in": 1}})
    e.commit(0, {_key(0): 1})
    e.queries.committed(0, {}, seconds=0.25)
    families = {f.name: f for f in text_string_to_metric_families(e.get("/metrics")[1])}
    kinds = {name: f.type for name, f in families.items()}
    assert kinds["streamlib_process"] == "counter" and kinds["streamlib_records_lag"] == "gauge"
    assert kinds["streamlib_batch_duration_seconds"] == "histogram"
    assert kinds["streamlib_record_e2e_latency_seconds"] == "histogram"
    assert all(f.documentation for f in families.values())

    def samples(name):
        return {tuple(sorted(s.labels.items())): s.value for s in families[name].samples
                if s.name == name or s.name == name + "_total"}

    app = ("application", "app")
    assert samples("streamlib_process") == {(app,): 12}
    assert samples("streamlib_task_process") == {(app, ("task", "0_0")): 8, (app, ("task", "0_1")): 5}
    assert samples("streamlib_records_lag") == {(app, ("partition", "0"), ("topic", "events")): 4,
                                                (app, ("partition", "1"), ("topic", "events")): 0}
    assert samples("streamlib_estimate_num_keys")[(app, ("store", "counts"), ("task", "0_1"))] == 5
    assert samples("streamlib_stream_time_seconds") == {(app,): 5.0}
    duration = {s.name: s.value for s in families["streamlib_batch_duration_seconds"].samples}
    assert duration["streamlib_batch_duration_seconds_count"] == 1
    assert duration["streamlib_batch_duration_seconds_sum"] == 0.25


def test_kept_alive_connections_hold_no_worker_and_pipelined_requests_are_served(endpoint):
    import http.client

    # a worker holding a kept-alive connection would keep it for the whole timeout
    e = endpoint(application_server_threads=1, application_server_request_timeout=timedelta(seconds=60))
    e.commit(0, {_key(i): i for i in range(3)})
    idle = http.client.HTTPConnection("127.0.0.1", e.port, timeout=10)
    idle.request("GET", f"/stores/counts/{_key(1)}")
    assert json.loads(idle.getresponse().read()) == {"key": _key(1), "value": 1}
    # the one worker is free while `idle` stays open: another client is served
    other = http.client.HTTPConnection("127.0.0.1", e.port, timeout=10)
    for i in range(3):
        other.request("GET", f"/stores/counts/{_key(i)}")
        assert json.loads(other.getresponse().read()) == {"key": _key(i), "value": i}
    idle.request("GET", f"/stores/counts/{_key(2)}")   # and `idle` again, on its connection
    assert json.loads(idle.getresponse().read())["value"] == 2
    with socket.create_connection(("127.0.0.1", e.port), timeout=10) as s:
        s.sendall(b"".join(b"GET /stores/counts/%s HTTP/1.1\r\nHost: x\r\n\r\n" % _key(i).encode()
                           for i in range(3)))
        reader = s.makefile("rb")
        for i in range(3):
            response = http.client.HTTPResponse(_Replay(reader))
            response.begin()
            assert json.loads(response.read()) == {"key": _key(i), "value": i}
    idle.close()
    other.close()


class _Replay:
    """A socket-like object whose makefile() is an already open reader that a response
    cannot close (several responses read from one stream)."""

    def __init__(self, reader):
        self._reader = reader

    def makefile(self, *args, **kwargs):
        return self

    def close(self):
        pass

    def __getattr__(self, name):
        return getattr(self._reader, name)


def test_malformed_requests_get_their_error_answers(endpoint):
    e = endpoint()
    e.commit(0, {_key(0): 1})
    with socket.create_connection(("127.0.0.1", e.port), timeout=10) as s:
        s.sendall(b"GET /" + b"k" * 70_000 + b" HTTP/1.1\r\n\r\n")
        assert s.makefile("rb").readline().startswith(b"HTTP/1.1 414")
    with socket.create_connection(("127.0.0.1", e.port), timeout=10) as s:
        s.sendall(b"POST /stores HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
        assert s.makefile("rb").readline().startswith(b"HTTP/1.1 501")


def test_a_bare_port_binds_to_loopback(endpoint):
    e = endpoint(application_server="0")
    assert e.queries.server.address[0] == "127.0.0.1"


def _wait(condition, seconds=30.0):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)

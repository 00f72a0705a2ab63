"""The query endpoint's CPU per request and its latency under N concurrent clients, without Spark.

A count store of ``--keys`` keys (4 changelog partitions) followed by its query
replicas exactly as a running application's are (``Queries``, the real HTTP server),
while a feeder thread commits a batch of ``--updates`` changed counts every 0.5 s (the
replicas apply it and publish a version, as behind a running query). Then
``--clients`` clients, spread over ``--client-procs`` processes of their own (not the
server's), each make ``--requests`` GETs and wait for each answer before the next:
point lookups (``--kind get``) or pages of ``--page`` entries (``--kind page``), a new
connection per request or one kept-alive connection per client (``--keep-alive``),
with Python's ``http.client`` or (``--client raw``) a socket and ``httptools``' response
parser, several times less CPU per request than ``http.client``, the same requests.
That is a closed loop: the clients send as fast as they are answered, so on a machine
with few cores the latency is mostly the clients' and the server's CPU per request
times the clients' number. ``--rate R`` makes it an open loop instead (as ``wrk2``):
the clients send ``R`` requests/s together on a fixed schedule, and a request's latency
counts from when it was due to be sent, so an answer that came late delays the next
sends and is counted, not hidden (coordinated omission); the service time (from the
actual send) is reported beside it.

Reported: p50/p99/max latency, and CPU time per request measured apart for the
server's threads (the HTTP threads, read from ``/proc``), the whole server process (the
feeder and the replica applier too) and the client processes. On a machine with
fewer cores than processes the clients' CPU is taken from the same cores the server
needs, so compare the server's CPU per request between trees, not only latencies.
``--profile out.prof`` runs each HTTP thread under cProfile (slower; for shares only).

    .venv/bin/python benchmarks/query_http_bench.py [--keys 100000] [--clients 50]
        [--requests 20] [--client-procs 2] [--kind get|page] [--keep-alive]
        [--client http.client|raw] [--rate R [R ...]] [--switch-interval S]
        [--profile F] [--trace] [--pollers N]
"""
from __future__ import annotations

import argparse
import cProfile
import http.client
import multiprocessing
import socket
import os
import pstats
import random
import resource
import struct
import sys
import tempfile
import shutil
import threading
import time

import httptools
import numpy as np

import query_trace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from streamlib import Consumed, Materialized, Serdes, StreamsBuilder, StreamsConfig  # noqa: E402
from streamlib.query import server as query_server  # noqa: E402
from streamlib.query.service import Queries  # noqa: E402
from streamlib.state.changelog import Changelog  # noqa: E402
from streamlib.state.timestamped import encode_timestamped  # noqa: E402
from streamlib.topics import default_partitioner, open_backend  # noqa: E402

PARTITIONS = 4
STORE = "counts"


def key(i: int) -> str:
    return f"key{i:07d}"


class Store:
    """A count store's changelog written here, its replicas followed and served as
    ``Streams`` does it."""

    def __init__(self, work: str, threads: int):
        bootstrap = f"local://{work}/log"
        self.backend = open_backend(bootstrap)
        topic = f"bench-{STORE}-changelog"
        self.backend.create_topic(topic, PARTITIONS, {"cleanup.policy": "compact"})
        self.logs = [Changelog(self.backend, topic, p, PARTITIONS, f"bench/{p}") for p in range(PARTITIONS)]
        builder = StreamsBuilder()
        (builder.stream("events", consumed=Consumed.with_(Serdes.string(), Serdes.string()))
         .group_by_key().count(materialized=Materialized.as_(STORE)))
        config = StreamsConfig(application_id="bench", bootstrap=bootstrap, state_dir=f"{work}/state",
                               application_server="127.0.0.1:0", application_server_threads=threads)
        self.queries = Queries(builder.build(), config, lambda: self.backend)
        self.queries.starting(lambda: {"records_in": 0, "tasks": {}})
        self.batch = 0

    def commit(self, counts: dict[int, int]) -> None:
        """One committed batch of these counts, returned once the replicas published it."""
        by_partition: dict[int, list] = {p: [] for p in range(PARTITIONS)}
        for i, count in counts.items():
            by_partition[default_partitioner(key(i).encode(), PARTITIONS)].append((key(i).encode(), encode_timestamped(struct.pack(">q", count), 0)))
        reports = {}
        for p, pairs in by_partition.items():
            _, end = self.logs[p].append(self.batch, [k for k, _ in pairs], [v for _, v in pairs], [0] * len(pairs))
            reports[f"0_{p}"] = {"changelog_offsets": {STORE: end}}
        self.queries.committed(self.batch, reports)
        deadline = time.monotonic() + 60
        while self.queries.replicas.published is None or self.queries.replicas.published.batch != self.batch:
            assert time.monotonic() < deadline, "batch not published"
            time.sleep(0.005)
        self.batch += 1


def thread_cpu_seconds(prefix: str, kernel: bool = False) -> float:
    """CPU time of this process's threads whose name starts with ``prefix`` (``kernel``:
    only the time in the kernel, at the clock tick's resolution)."""
    total = 0.0
    for thread in threading.enumerate():
        if thread.name.startswith(prefix) and thread.native_id is not None:
            try:
                if kernel:
                    with open(f"/proc/self/task/{thread.native_id}/stat") as f:
                        total += int(f.read().rsplit(")", 1)[1].split()[12]) / os.sysconf("SC_CLK_TCK")
                else:
                    with open(f"/proc/self/task/{thread.native_id}/schedstat") as f:
                        total += int(f.read().split()[0]) / 1e9
            except OSError:
                pass
    return total


def process_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class RawConnection:
    """A client connection as ``http.client``'s is used here (HTTP/1.1, closed by the
    client unless kept alive), its answers parsed by ``httptools``: the server sees the
    same requests and hang-ups, the client spends far less CPU per request."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.done = False
        self.parser = httptools.HttpResponseParser(self)

    def on_message_complete(self) -> None:
        self.done = True

    def get(self, path: str) -> int:
        """The status of a GET of ``path``, its body read."""
        self.sock.sendall(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: identity\r\n\r\n" % path.encode())
        self.done = False
        while not self.done:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the server closed the connection")
            self.parser.feed_data(data)
        return self.parser.get_status_code()

    def close(self) -> None:
        self.sock.close()


def clients(port: int, keys: int, n: int, requests: int, kind: str, page: int, keep_alive: bool,
            raw: bool, seed: int, ready, go, out, schedule=None) -> None:
    """In a child process: ``n`` client threads, started together when ``go`` is set;
    puts ``(latencies ms, service times ms, failures, CPU seconds of this process, (first
    send, last answer), [(key, scheduled, sent, answered)])`` on ``out``. Closed loop (``schedule`` ``None``): each client
    sends its next request as soon as it has its answer. Open loop (``schedule``
    ``(start, interval, offsets)``, ``start`` a shared value on ``time.monotonic()``'s
    clock, which every process shares): client ``i`` sends its ``k``-th request at
    ``start + (offsets[i] + k) * interval`` or, if an answer came later than that, at
    once; latency counts from the scheduled time (wrk2's correction of coordinated
    omission), service time from the send."""
    latencies: list[float] = []
    services: list[float] = []
    failures: list[str] = []
    span = [float("inf"), 0.0]   # the first send, the last answer
    sends: list[tuple[str, float, float, float]] = []   # for --trace

    def path(k: str) -> str:
        return f"/stores/{STORE}/{k}" if kind == "get" else f"/stores/{STORE}?from={k}&limit={page}"

    def client(i: int) -> None:
        rng = random.Random(seed * 1000 + i)
        conn = None
        go.wait()
        if schedule is not None:
            start, interval, offsets = schedule
            due = start.value + offsets[i] * interval   # set before ``go``
        for _ in range(requests):
            if schedule is not None:
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                scheduled = due
                due += interval
            k = key(rng.randrange(keys))
            t = time.monotonic()
            try:
                if raw:
                    conn = conn or RawConnection(port)
                    status = conn.get(path(k))
                else:
                    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                    conn.request("GET", path(k))
                    response = conn.getresponse()
                    response.read()
                    status = response.status
                if not keep_alive:
                    conn.close()
                    conn = None
                if status != 200:
                    failures.append(str(status))
            except OSError as exc:
                failures.append(type(exc).__name__)
                conn = None
            done = time.monotonic()
            span[0], span[1] = min(span[0], t), max(span[1], done)
            services.append((done - t) * 1000)
            latencies.append((done - (t if schedule is None else scheduled)) * 1000)
            sends.append((k, t if schedule is None else scheduled, t, done))
        if conn is not None:
            conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    cpu = process_cpu_seconds()
    ready.put(True)
    for thread in threads:
        thread.join()
    out.put((latencies, services, failures, process_cpu_seconds() - cpu, span, sends))


def run_clients(port: int, args: argparse.Namespace) -> tuple[list[float], list[float], list[str], float, float,
                                                              list[tuple[str, float, float, float]]]:
    """The clients in ``args.client_procs`` processes; their latencies, service times,
    failures, CPU, the seconds from the first send to the last answer and each lookup's
    (key, scheduled, sent, answered). With
    ``args.rate`` (requests/s of all clients together) an open loop: the clients' sends
    are spread evenly over each ``args.clients / args.rate`` seconds, starting 0.5 s
    after every process is ready."""
    context = multiprocessing.get_context("spawn")
    ready, out, go = context.Queue(), context.Queue(), context.Event()
    per = [args.clients // args.client_procs + (i < args.clients % args.client_procs)
           for i in range(args.client_procs)]
    rate = getattr(args, "rate", None)
    start = context.Value("d", 0.0)
    # client j of all (j = first + i in its process) sends at start + j / rate + k * interval
    firsts = [sum(per[:i]) for i in range(len(per))]
    procs = [context.Process(target=_scheduled_clients,
                             args=(port, args, n, i, ready, go, out, start,
                                   None if not rate else (args.clients / rate, firsts[i], args.clients)))
             for i, n in enumerate(per) if n]
    for proc in procs:
        proc.start()
    for _ in procs:
        ready.get()
    start.value = time.monotonic() + 0.5
    go.set()
    results = [out.get() for _ in procs]
    for proc in procs:
        proc.join()
    return ([x for r in results for x in r[0]], [x for r in results for x in r[1]],
            [x for r in results for x in r[2]], sum(r[3] for r in results),
            max(r[4][1] for r in results) - min(r[4][0] for r in results), [x for r in results for x in r[5]])


def _scheduled_clients(port: int, args: argparse.Namespace, n: int, seed: int, ready, go, out, start,
                       plan) -> None:
    """:func:`clients` in a child process; ``plan`` ``(interval, first, all)`` for an open loop."""
    schedule = None
    if plan is not None:
        interval, first, total = plan
        schedule = (start, interval, [(first + i) / total for i in range(n)])
    clients(port, args.keys, n, args.requests, args.kind, args.page, args.keep_alive,
            getattr(args, "client", "") == "raw", seed, ready, go, out, schedule)


class StallProbe:
    """A thread of the server's process that sleeps 1 ms at a time and notes how late it
    wakes: the process's own stalls (the GIL held elsewhere, or no core) while clients run."""

    def __init__(self) -> None:
        self.late: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stall-probe", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            t = time.monotonic()
            time.sleep(0.001)
            self.late.append((time.monotonic() - t - 0.001) * 1000)

    def stop(self) -> str:
        self._stop.set()
        self._thread.join()
        late = self.late or [0.0]
        return (f"the process's 1 ms sleeps woke late by p99 {float(np.percentile(late, 99)):.1f} ms, "
                f"max {max(late):.1f} ms, {sum(x > 10 for x in late)} times over 10 ms")


def measure(port: int, args: argparse.Namespace, note: str, queries=None) -> str:
    """Runs the clients against the endpoint on ``port`` (served by this process): the
    summary line, latencies and CPU per request apart for the server's HTTP threads,
    the server process and the clients. With ``args.trace`` (and ``queries``, the
    endpoint's): where the slow lookups' time went (:mod:`query_trace`), after it."""
    load = os.getloadavg()[0]
    accept_cpu, server_cpu = thread_cpu_seconds("streamlib-http-accept"), thread_cpu_seconds("streamlib-http")
    kernel_cpu = thread_cpu_seconds("streamlib-http", kernel=True)
    process_cpu = process_cpu_seconds()
    probe = StallProbe()
    trace = query_trace.Trace(queries) if getattr(args, "trace", False) and queries is not None else None
    latencies, services, failures, client_cpu, seconds, sends = run_clients(port, args)
    if trace is not None:
        trace.stop()
    stalls = probe.stop()
    server_cpu = thread_cpu_seconds("streamlib-http") - server_cpu
    accept_cpu = thread_cpu_seconds("streamlib-http-accept") - accept_cpu
    kernel_cpu = thread_cpu_seconds("streamlib-http", kernel=True) - kernel_cpu
    process_cpu = process_cpu_seconds() - process_cpu
    n = len(latencies)
    p50, p99 = (float(np.percentile(latencies, q)) for q in (50, 99))
    rate = getattr(args, "rate", None)
    if rate:
        s50, s99 = (float(np.percentile(services, q)) for q in (50, 99))
        loop = (f"open loop at {rate:,.0f}/s, latency from the scheduled send; "
                f"service time from the send p50 {s50:.2f} ms, p99 {s99:.2f} ms; ")
    else:
        loop = "closed loop; "
    return (f"{args.kind} x {n} ({args.clients} clients in {args.client_procs} processes, {loop}"
            f"{'kept-alive' if args.keep_alive else 'a new connection each'}, "
            f"{getattr(args, 'client', 'http.client')} clients, {args.keys:,} keys, "
            f"{note}): p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {max(latencies):.1f} ms, "
            f"{n / seconds:,.0f}/s; errors {len(failures)} {sorted(set(failures))}; "
            f"CPU per request: server threads {server_cpu / n * 1000:.3f} ms (the accepting thread "
            f"{accept_cpu / n * 1000:.3f}, in the kernel {kernel_cpu / n * 1000:.3f}), server process "
            f"{process_cpu / n * 1000:.3f} ms, clients {client_cpu / n * 1000:.3f} ms; {stalls}; "
            f"load {load:.2f} -> {os.getloadavg()[0]:.2f}" + ("" if trace is None else "\n" + trace.report(sends)))


def add_rate_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rate", type=float, nargs="+", default=[0.0],
                        help="open loop: requests/s of all clients together, each client's sent on a "
                        "schedule, latency counted from the scheduled time (wrk2); 0 (the default): closed "
                        "loop, each client's next request once it has its answer; several: one after another")


def add_trace_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", action="store_true", help="debug: where the lookups over 20 ms spent their time "
                        "(query_trace.py; wraps the endpoint's methods, so slower)")
    parser.add_argument("--pollers", type=int, help="the endpoint's polling threads (server.QUICK_POLLERS)")


def set_pollers(args: argparse.Namespace) -> None:
    if args.pollers:
        query_server.QUICK_POLLERS = args.pollers


def add_switch_interval_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--switch-interval", type=float,
                        help="sys.setswitchinterval() in the application's process, seconds (Python's "
                        "default 0.005: how long a thread waits for the GIL a busy thread holds)")


def set_switch_interval(args: argparse.Namespace) -> None:
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
        print(f"switch interval {sys.getswitchinterval() * 1000:g} ms", flush=True)


def each_rate(args: argparse.Namespace) -> list[argparse.Namespace]:
    """``args`` once per ``--rate`` given, each with that one rate."""
    return [argparse.Namespace(**{**vars(args), "rate": rate}) for rate in args.rate]


def profiled_workers(stats: list) -> None:
    """Run the endpoint's threads under cProfile, each profile appended to ``stats``."""
    for name in ("_work", "_accept"):
        original = getattr(query_server.PooledServer, name)

        def wrapped(self, *a, _original=original):
            profile = cProfile.Profile()
            stats.append(profile)
            profile.runcall(_original, self, *a)

        setattr(query_server.PooledServer, name, wrapped)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--updates", type=int, default=2_000, help="changed counts committed every 0.5 s")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=20, help="requests per client")
    parser.add_argument("--client-procs", type=int, default=2, help="processes the clients run in")
    parser.add_argument("--kind", choices=("get", "page"), default="get")
    parser.add_argument("--page", type=int, default=10, help="entries per page (--kind page)")
    parser.add_argument("--keep-alive", action="store_true", help="one connection per client")
    parser.add_argument("--client", choices=("http.client", "raw"), default="http.client",
                        help="raw: a socket and httptools' parser (less client CPU)")
    add_rate_argument(parser)
    add_switch_interval_argument(parser)
    add_trace_argument(parser)
    parser.add_argument("--threads", type=int, default=8, help="application_server_threads")
    parser.add_argument("--profile", help="write the HTTP threads' cProfile stats here")
    args = parser.parse_args()
    set_switch_interval(args)
    set_pollers(args)
    profiles: list = []
    if args.profile:
        profiled_workers(profiles)
    work = tempfile.mkdtemp(prefix="query-http-bench-")
    store = Store(work, args.threads)
    stop = threading.Event()
    try:
        for lo in range(0, args.keys, 100_000):
            store.commit({i: 1 for i in range(lo, min(args.keys, lo + 100_000))})

        def feed() -> None:
            rng = random.Random(1)
            while not stop.wait(0.5):
                store.commit({rng.randrange(args.keys): rng.randrange(1, 100) for _ in range(args.updates)})

        feeder = threading.Thread(target=feed, name="feeder", daemon=True)
        feeder.start()
        for one in each_rate(args):
            print(measure(store.queries.server.address[1], one, f"{store.batch} batches", store.queries), flush=True)
    finally:
        stop.set()
        store.queries.close()
        shutil.rmtree(work, ignore_errors=True)
    if args.profile:
        for p in profiles:
            p.create_stats()
        merged = pstats.Stats(profiles[0])
        for p in profiles[1:]:
            merged.add(p)
        merged.dump_stats(args.profile)
        merged.sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()

"""``--trace`` of the query benches: where a slow HTTP lookup's time went.

Debug only: it wraps methods of one running endpoint and replica set (instance
attributes, nothing in the library changes) and records, on ``time.monotonic()``'s
clock (which the client processes share):

- per lookup, on the polling thread that answered it: when its poll returned (the
  listener or the connection reported), when the handler began and ended (RocksDB read
  and JSON encoding) and when the answer was sent;
- the replica applier's intervals (the writer lock of ``StoreReplicas.writing()`` held
  for one batch), the driver's batches (``Queries.committed``: its ``seconds`` back from
  the commit), the GC's pauses (``gc.callbacks``, per generation);
- a 1 ms sleeper's late wake-ups with the process's CPU time meanwhile (CPU ≈ the late
  time: some thread of ours ran, holding the GIL or in native code; ≈ 0: the process
  had no core), and every 50 ms each thread's CPU time, so that a stall names the
  threads that ran during it.

The clients return each lookup's key, send and answer times; :func:`report` joins
them by key and prints, for the lookups over ``slow_ms``, the median of each part and
what overlapped them.
"""
from __future__ import annotations

import gc
import os
import resource
import threading
import time
from collections import Counter, defaultdict
from typing import Any

import numpy as np


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _thread_cpu() -> dict[str, float]:
    """CPU seconds per thread name (Python's names; native threads by their comm)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, float] = defaultdict(float)
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
            name = names.get(int(tid))
            if name is None:
                with open(f"/proc/self/task/{tid}/comm") as f:
                    name = "native:" + f.read().strip()
        except OSError:
            continue
        out[_family(name)] += ns / 1e9
    return out


def _family(name: str) -> str:
    """Thread names without their number (``streamlib-http-accept-2`` -> ``streamlib-http-accept``)."""
    head, _, tail = name.rpartition("-")
    return head if head and tail.isdigit() else name


class Trace:
    def __init__(self, queries: Any) -> None:
        self.gcs: list[tuple[float, float, int]] = []
        self.applies: list[tuple[float, float]] = []
        self.batches: list[tuple[float, float]] = []
        self.stalls: list[tuple[float, float, float]] = []   # (start, end, process CPU meanwhile)
        self.cpu: list[tuple[float, dict[str, float]]] = []
        self.lookups: dict[str, list[tuple[float, float, float, float]]] = defaultdict(list)
        self._local = threading.local()
        self._stop = threading.Event()
        self._gc_start = 0.0
        gc.callbacks.append(self._on_gc)
        replicas, server = queries.replicas, queries.server
        apply, committed = replicas._apply, queries.committed
        reported, lookup = server._server._reported, server.lookup

        def traced_apply(*args: Any) -> Any:
            t = time.monotonic()
            try:
                return apply(*args)
            finally:
                self.applies.append((t, time.monotonic()))

        def traced_committed(batch_id: int, reports: dict, seconds: Any = None) -> Any:
            now = time.monotonic()
            self.batches.append((now - (seconds or 0.0), now))
            return committed(batch_id, reports, seconds)

        def traced_reported(*args: Any) -> Any:
            self._local.polled, self._local.found = time.monotonic(), None
            try:
                return reported(*args)
            finally:
                found = self._local.found
                if found is not None:
                    self.lookups[found[0]].append((self._local.polled, found[1], found[2], time.monotonic()))

        def traced_lookup(store: Any, text: str, authorization: Any) -> Any:
            t = time.monotonic()
            try:
                return lookup(store, text, authorization)
            finally:
                self._local.found = (text, t, time.monotonic())

        self._undo = [(replicas, "_apply"), (queries, "committed"), (server._server, "_reported"),
                      (server, "lookup")]
        replicas._apply, queries.committed = traced_apply, traced_committed
        server._server._reported, server.lookup = traced_reported, traced_lookup
        self._threads = [threading.Thread(target=self._probe, name="trace-probe", daemon=True),
                         threading.Thread(target=self._sample, name="trace-sampler", daemon=True)]
        for thread in self._threads:
            thread.start()

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_start = time.monotonic()
        else:
            self.gcs.append((self._gc_start, time.monotonic(), info["generation"]))

    def _probe(self) -> None:
        while not self._stop.is_set():
            t, cpu = time.monotonic(), _cpu()
            time.sleep(0.001)
            now = time.monotonic()
            if now - t > 0.006:
                self.stalls.append((t, now, _cpu() - cpu))

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.cpu.append((time.monotonic(), _thread_cpu()))

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()
        gc.callbacks.remove(self._on_gc)
        for owner, name in self._undo:
            owner.__dict__.pop(name, None)

    # -- the report -------------------------------------------------------------------------
    def report(self, requests: list[tuple[str, float, float, float]], slow_ms: float = 20.0) -> str:
        """``requests``: the clients' (key, scheduled, sent, answered) per lookup."""
        lines, parts, causes = [], defaultdict(list), Counter()
        slow = 0
        for text, scheduled, sent, done in requests:
            if (done - scheduled) * 1000 < slow_ms:
                continue
            slow += 1
            seen = [x for x in self.lookups.get(text, ()) if sent <= x[0] <= done]
            if not seen:
                causes["not matched"] += 1
                continue
            polled, begun, ended, out = seen[0]
            for name, ms in (("schedule (open loop: late send)", sent - scheduled), ("send -> poll", polled - sent),
                             ("poll -> handler", begun - polled), ("handler", ended - begun),
                             ("handler -> sent", out - ended), ("sent -> client has it", done - out)):
                parts[name].append(ms * 1000)
            for name, spans in (("a GC pause", [(a, b) for a, b, _ in self.gcs]), ("a replica apply", self.applies),
                                ("a batch on the driver", self.batches),
                                ("a stall >6 ms", [(a, b) for a, b, _ in self.stalls])):
                if any(a < done and b > sent for a, b in spans):
                    causes[name] += 1
        lines.append(f"trace: {slow} of {len(requests)} lookups over {slow_ms:g} ms; parts of those (median / p90 ms):")
        for name, values in parts.items():
            lines.append(f"  {name}: {np.median(values):.1f} / {np.percentile(values, 90):.1f}")
        lines.append("  overlapping: " + ", ".join(f"{k} {v}" for k, v in causes.most_common()))
        pauses = [(b - a) * 1000 for a, b, _ in self.gcs]
        by_gen = Counter(g for _, _, g in self.gcs)
        lines.append(f"  GC: {len(pauses)} pauses {dict(by_gen)}, max {max(pauses, default=0):.1f} ms, "
                     f"{sum(p > 5 for p in pauses)} over 5 ms")
        applies = [(b - a) * 1000 for a, b in self.applies]
        lines.append(f"  replica applies: {len(applies)}, median {np.median(applies or [0]):.1f} ms, "
                     f"max {max(applies, default=0):.1f} ms")
        stalls = [(b - a) * 1000 for a, b, _ in self.stalls]
        busy = [c / (b - a) for a, b, c in self.stalls]
        lines.append(f"  stalls >6 ms: {len(stalls)}, max {max(stalls, default=0):.1f} ms; process CPU during them: "
                     f"{sum(x > 0.5 for x in busy)} mostly running, {sum(x <= 0.5 for x in busy)} mostly not")
        ran: Counter = Counter()
        for a, b, _ in self.stalls:   # the samples just before and just after the stall
            before = [c for t, c in self.cpu if t <= a]
            after = [c for t, c in self.cpu if t >= b]
            if before and after:
                for name, seconds in after[0].items():
                    ran[name] += seconds - before[-1].get(name, 0.0)
        lines.append("  threads' CPU in the 50 ms samples around the stalls (ms): "
                     + ", ".join(f"{k} {v * 1000:.0f}" for k, v in ran.most_common(8)))
        return "\n".join(lines)

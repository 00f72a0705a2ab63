"""The application's metrics for Prometheus (``GET /metrics``), with ``prometheus_client``.

Counters for what only grows (records in, out, dropped, restored; the endpoint's
requests, disconnects and refusals), gauges for levels (stream time, watermark, lag per
input partition, store sizes), histograms for batch duration, the end-to-end latency of
each task's newest record at commit, and request duration. Names follow Kafka Streams'
where it has one (``process-total`` -> ``streamlib_process_total``, ``records-lag``,
``dropped-records-total``, ``restore-total``, ``estimate-num-keys``,
``record-e2e-latency``); labels are ``application``, ``task``, ``store``, ``topic``,
``partition``, and ``reason`` and ``node`` for the drops per reason.

Tasks report per batch (a task object lives one batch); :meth:`ApplicationMetrics.pass_ran`
adds each pass's reports into per-task totals, so per-task counters grow like the
application's.
"""
from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any, Callable, Iterator, Optional

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

#: the text format ``generate_latest`` writes
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

#: ``app.metrics()`` counter -> (Prometheus name without ``_total``, help)
COUNTERS = {
    "records_in": ("process", "Records the tasks processed (Kafka Streams' process-total)."),
    "records_out": ("records_out", "Records the tasks wrote to output and repartition topics."),
    "dropped_records": ("dropped_records", "Records dropped, e.g. a null key in an aggregation "
                                           "(Kafka Streams' dropped-records-total)."),
    "skipped_records": ("skipped_records", "Records the deserialization handler skipped (log_and_continue): "
                                           "undecodable, or too far ahead of the wall clock."),
    "dead_letter_records": ("dead_letter_records", "Records sent to the dead-letter topic."),
    "restored_records": ("restore", "Changelog records restored into stores (Kafka Streams' restore-total)."),
}
_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


class ApplicationMetrics:
    """One application's Prometheus registry: what ``app.metrics()`` holds, read at each
    scrape, and what is observed as batches commit and requests are served."""

    def __init__(self, application_id: str):
        self.application_id = application_id
        self.registry = CollectorRegistry(auto_describe=False)
        self._snapshot: Callable[[], dict] = dict
        self._task_totals: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self._lock = threading.Lock()
        app = ["application"]
        self.batch_duration = Histogram(
            "streamlib_batch_duration_seconds", "Time from a micro-batch's start to its commit.",
            app, buckets=_LATENCY_BUCKETS, registry=self.registry).labels(application_id)
        self.e2e_latency = Histogram(
            "streamlib_record_e2e_latency_seconds",
            "Wall-clock time at commit minus the timestamp of each task's newest record in the "
            "batch (Kafka Streams' record-e2e-latency).",
            app, buckets=_LATENCY_BUCKETS, registry=self.registry).labels(application_id)
        self.requests = Counter("streamlib_query_requests", "Query endpoint requests by status code.",
                                app + ["code"], registry=self.registry)
        self.request_duration = Histogram(
            "streamlib_query_request_duration_seconds", "Query endpoint request handling time.",
            app, registry=self.registry).labels(application_id)
        self.disconnects = Counter("streamlib_query_disconnects", "Query clients that went away mid-request.",
                                   app, registry=self.registry).labels(application_id)
        self.unauthorized = Counter("streamlib_query_unauthorized",
                                    "Query requests refused for a missing or wrong bearer token (401).",
                                    app, registry=self.registry).labels(application_id)
        self.rejected = Counter("streamlib_query_rejected",
                                "Query connections refused: busy (pool full), idle, connections (too many), tls (handshake failed).",
                                app + ["reason"], registry=self.registry)
        self._by_status: dict[int, Any] = {}
        self.registry.register(_Snapshot(self))

    def request_done(self, status: int, seconds: float) -> None:
        """A query request answered ``status`` after ``seconds``."""
        counter = self._by_status.get(status)
        if counter is None:
            counter = self._by_status[status] = self.requests.labels(self.application_id, str(status))
        counter.inc()
        self.request_duration.observe(seconds)

    def follow(self, snapshot: Callable[[], dict]) -> None:
        """Read ``snapshot()`` (``app.metrics()``) at every scrape."""
        self._snapshot = snapshot

    def pass_ran(self, reports: dict[str, dict], now_ms: Optional[int] = None) -> None:
        """One pass of a batch ran: its task reports (``task_id -> metrics``)."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        with self._lock:
            for task, report in reports.items():
                totals = self._task_totals[task]
                for counter in COUNTERS:
                    totals[counter] += int(report.get(counter, 0) or 0)
        for report in reports.values():
            newest = report.get("stream_time", -1)
            if report.get("records_in") and isinstance(newest, int) and newest >= 0:
                self.e2e_latency.observe(max(0, now_ms - newest) / 1000)

    def render(self) -> bytes:
        return generate_latest(self.registry)

    def task_totals(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {task: dict(totals) for task, totals in self._task_totals.items()}

    def snapshot(self) -> dict:
        return self._snapshot()


class _Snapshot:
    """Collects ``app.metrics()`` and the per-task totals at scrape time."""

    def __init__(self, owner: ApplicationMetrics):
        self._owner = owner

    def collect(self) -> Iterator[Metric]:
        app = self._owner.application_id
        snapshot = self._owner.snapshot()
        totals = self._owner.task_totals()
        for key, (name, text) in COUNTERS.items():
            if key in snapshot:
                family = CounterMetricFamily(f"streamlib_{name}", text, labels=["application"])
                family.add_metric([app], _number(snapshot[key]))
                yield family
            per_task = CounterMetricFamily(f"streamlib_task_{name}", f"Per task: {text}",
                                           labels=["application", "task"])
            for task, counts in sorted(totals.items()):
                per_task.add_metric([app, task], counts.get(key, 0))
            yield per_task
        yield _drops(app, snapshot)
        yield from _levels(app, snapshot)


def _drops(app: str, snapshot: dict) -> Metric:
    """``metrics()["drops"]``: records dropped per reason and node (they add up to
    ``streamlib_dropped_records_total``)."""
    family = CounterMetricFamily("streamlib_dropped_records_by_reason",
                                 "Records dropped, per reason (late, null_key, deserialization_error, ...) "
                                 "and node.", labels=["application", "reason", "node"])
    for reason, by_node in sorted((snapshot.get("drops") or {}).items()):
        for node, count in sorted(by_node.items()):
            family.add_metric([app, reason, node], _number(count))
    return family


def _levels(app: str, snapshot: dict) -> Iterator[Metric]:
    tasks = snapshot.get("tasks") or {}
    for key, name, text in (("stream_time", "streamlib_stream_time_seconds",
                             "The application's stream time: the largest record timestamp seen."),
                            ("watermark", "streamlib_watermark_seconds",
                             "Stream time behind which windows are closed (the slowest time-aware task).")):
        gauge = GaugeMetricFamily(name, text, labels=["application"])
        if isinstance(snapshot.get(key), int) and snapshot[key] >= 0:
            gauge.add_metric([app], snapshot[key] / 1000)
        yield gauge
    task_time = GaugeMetricFamily("streamlib_task_stream_time_seconds", "Per task: its stream time.",
                                  labels=["application", "task"])
    keys = GaugeMetricFamily("streamlib_estimate_num_keys",
                             "Entries in a task's store (Kafka Streams' estimate-num-keys).",
                             labels=["application", "task", "store"])
    for task, report in sorted(tasks.items()):
        if isinstance(report.get("stream_time"), int) and report["stream_time"] >= 0:
            task_time.add_metric([app, task], report["stream_time"] / 1000)
        for store, entries in sorted((report.get("stores") or {}).items()):
            keys.add_metric([app, task, store], _number(entries))
    yield task_time
    yield keys
    lag = GaugeMetricFamily("streamlib_records_lag",
                            "Records in an input partition not yet processed (Kafka Streams' records-lag).",
                            labels=["application", "topic", "partition"])
    for topic, parts in sorted((snapshot.get("lag") or {}).items()):
        for partition, behind in sorted(parts.items()):
            lag.add_metric([app, topic, str(partition)], _number(behind))
    yield lag
    last = GaugeMetricFamily("streamlib_last_batch_id", "The newest committed micro-batch.",
                             labels=["application"])
    if isinstance(snapshot.get("last_batch"), int):
        last.add_metric([app], snapshot["last_batch"])
    yield last


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0

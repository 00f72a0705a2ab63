"""``Streams``: the lifecycle of a running application (Kafka Streams' ``KafkaStreams``)."""
from __future__ import annotations

import ast
import json
import logging
import os
import shutil
import threading
from collections import defaultdict
from typing import Any, Optional

from .config import StreamsConfig
from .spark.query_errors import translate
from .instance import ApplicationLock
from .preflight import check_before_spark, prepare_changelogs, require_input_topics
from .progress import Progress
from .state.cache import release_everywhere
from .topics import parse_url
from .topology import Topology

log = logging.getLogger("streamlib")
#: A micro-batch reads consecutive topic partitions in one Spark task until it holds this
#: many records: each Python read task costs Spark 50-100 ms before its first record,
#: reading a few thousand records costs a few (the source's ``minRecordsPerPartition``).
READ_TOGETHER_RECORDS = 5_000


class Streams:
    """Runs a topology as a Spark Structured Streaming query.

    Parameters
    ----------
    topology : Topology
        What to run (``StreamsBuilder.build()``).
    config : StreamsConfig
        Application id, topics backend, state and checkpoint locations, ...
    spark : SparkSession, optional
        The session to run in; ``None`` gets the active one or creates a local one.

    Examples
    --------
    >>> app = Streams(builder.build(), StreamsConfig(application_id="wordcount"))  # doctest: +SKIP
    >>> app.process_available()                                                    # doctest: +SKIP
    >>> app.store("counts").get("hello")                                           # doctest: +SKIP
    3
    """

    def __init__(self, topology: Topology, config: Optional[StreamsConfig] = None, spark: Any = None):
        from .spark.session import get_or_create_session

        self.config = config or StreamsConfig()
        #: the topology with the config's default serdes filled in (``Topology.resolve``)
        self.topology = topology = topology.resolve(self.config)
        # Mistakes in the config and missing input topics fail here, not after Spark's
        # start; with a session already there the topics are checked at start().
        check_before_spark(topology, self.config, topics=spark is None and not _spark_running())
        if spark is None:
            from .spark.kafka_source import session_conf
            spark = get_or_create_session(conf=session_conf(self.config.bootstrap))
        else:
            from .spark.session import register_data_sources
            register_data_sources(spark)
        self.spark = spark
        self._query = None
        #: set while stop() runs: a batch failing meanwhile was interrupted by it
        self._stopping = False
        self._plan = None
        self._instance = ApplicationLock.of(self.config)
        self._queries: Any = None  # streamlib.query.service.Queries, made on first use
        self._progress = Progress()  # a line per batch at INFO, a bar while catching up
        from .spark.stopping import StopSignals

        #: SIGINT/SIGTERM while running: a clean stop, one line, exit 130/143
        self._signals = StopSignals()
        from .spark.micro_batch import MicroBatches

        #: runs each micro-batch; its totals outlive one query (spark/micro_batch.py)
        self._batches = MicroBatches(self._interactive, self._progress)

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Start processing continuously, one micro-batch per ``commit_interval`` (with user
        processors, also without input: their wall-clock punctuators fire on time)."""
        self._start(trigger={"processingTime": f"{self.config.commit_interval_ms} milliseconds"},
                    clock_ms=self.config.commit_interval_ms)
        self._signals.install(self.spark)

    def process_available(self) -> None:
        """Process everything available now (in batches of at most
        ``max_records_per_batch`` records when that is set), then return.

        Like Spark's ``availableNow``, built from back-to-back batches until a trigger
        finds nothing new: Spark runs a source without ``availableNow`` support as one
        batch to a fixed end, which would stop after a per-batch limit, or after
        re-running a batch left uncommitted by a crash.
        """
        from .spark.kafka_source import hit_progress_report_bug

        for attempt in (1, 2):
            self._progress.catching_up()
            self._start(trigger={"processingTime": "0 seconds"})
            self._signals.install(self.spark)
            try:
                self._wait(self._query.processAllAvailable)
                return
            except Exception as exc:
                if attempt == 2 or not hit_progress_report_bug(exc):
                    raise
            finally:
                self._progress.done()
                self.stop()

    def await_termination(self, timeout: Optional[float] = None) -> bool:
        """Wait until the query stops (or ``timeout`` seconds); re-raises its failure."""
        if self._query is None:
            return True
        query = self._query
        if timeout is None:
            self._wait(query.awaitTermination)
            return True
        return bool(self._wait(lambda: query.awaitTermination(timeout)))

    def _wait(self, call: Any) -> Any:
        """``call()`` (a blocking JVM call) in a helper thread, while the main thread
        polls for SIGINT/SIGTERM (:class:`~streamlib.spark.stopping.StopSignals`): on
        one, stop the application and exit 130/143 with one line on stderr."""
        if threading.current_thread() is not threading.main_thread():
            return _streamlib_errors(call)
        outcome: dict[str, Any] = {}

        def run() -> None:
            try:
                outcome["value"] = _streamlib_errors(call)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                outcome["error"] = exc

        helper = threading.Thread(target=run, name="streamlib-wait", daemon=True)
        self._signals.waiting = True
        try:
            helper.start()
            while helper.is_alive() and self._signals.received is None:
                helper.join(0.2)
        finally:
            self._signals.waiting = False
        if self._signals.received is not None:
            self.stop()
            self._signals.exit()
        if "error" in outcome:
            raise outcome["error"]
        return outcome.get("value")

    def stop(self) -> None:
        """Stop the query; the current micro-batch finishes or is re-run on restart."""
        self._signals.restore()
        try:
            if self._query is not None:
                self._stopping = True
                try:
                    self._query.stop()
                finally:
                    self._stopping = False
                self._query = None
                self._batches.stop()
                self._release_task_stores()
            if self._queries is not None:
                self._queries.stopped()
        finally:
            if self._query is None:
                self._instance.release()

    def _release_task_stores(self) -> None:
        """Workers keep task stores open between batches: have them closed, so that the
        state may be deleted, reset or opened elsewhere once the application stops."""
        if not release_everywhere(self.config.application_state_dir):
            log.warning("some task stores under %s are still held open",
                        self.config.application_state_dir)

    def cleanup(self) -> None:
        """Delete this application's local state (Kafka Streams' ``cleanUp``); progress
        (the checkpoint) and topics stay, so stores are restored from their changelogs."""
        if self._query is not None:
            raise RuntimeError("cleanup() while the application is running; stop() it first")
        self.stop()
        if self._queries is not None:
            self._queries.close()
            self._queries = None
        self._release_task_stores()  # (also those a failed earlier run left open)
        shutil.rmtree(self.config.application_state_dir, ignore_errors=True)

    @property
    def is_running(self) -> bool:
        return self._query is not None and self._query.isActive

    def _start(self, trigger: dict, clock_ms: int = 0) -> None:
        if self._query is not None:
            raise RuntimeError("the application is already running")
        # Before anything is written: one instance per application, fixed task counts.
        self._instance.acquire()
        try:
            self._start_query(trigger, clock_ms)
        except BaseException:
            self._instance.release()
            raise

    def _start_query(self, trigger: dict, clock_ms: int = 0) -> None:
        from .spark.checkpoint_files import local_checkpoint_logs
        from .spark.clock import needs_clock, with_clock
        from .spark.lower import BatchPlan
        from .spark.shipping import ship_user_modules
        from .topics.spec import BackendSpec
        from .spark import kafka_source
        from .spark.stopping import quiet_stops

        quiet_stops()
        backend_spec = BackendSpec.from_options(self._source_options())
        scheme, location, _ = parse_url(backend_spec.url)
        if scheme == "local":   # before anything is written
            from .spark.log_probe import require_visible_log

            require_visible_log(self.spark, location)
        backend = backend_spec.open()
        partitions = self._prepare_topics(backend)
        ship_user_modules(self.topology)
        self._plan = BatchPlan(self.spark, self.topology, self.config, backend_spec, partitions)
        checkpoint = self.config.resolved_checkpoint_location()
        # A Kafka log end may count transaction markers past the last record: there a
        # batch always closes windows itself rather than trust "more input is waiting".
        self._batches.begin(self._plan, checkpoint, None if kafka_source.is_kafka(self.config.bootstrap) else backend)
        self._progress.watch(checkpoint, backend)
        prepare_changelogs(self.topology, self.config, backend,
                           {stage.sub.id: stage.plan.num_partitions for stage in self._plan.stages})
        stream = self._source_stream(backend)
        if needs_clock(self.topology):   # batches without input, for wall-clock punctuators
            stream = with_clock(stream, clock_ms)
        writer = (stream.writeStream
                  .queryName(self.config.application_id)
                  .option("checkpointLocation", checkpoint)
                  .foreachBatch(self._run_batch)
                  .trigger(**trigger))
        self._interactive().starting(self.metrics)
        with local_checkpoint_logs(self.spark, checkpoint):
            self._query = writer.start()

    def _source_stream(self, backend: Any) -> Any:
        """The input rows: Spark's own Kafka source for ``kafka://``, else ours."""
        from .spark import kafka_source

        if kafka_source.is_kafka(self.config.bootstrap):
            return kafka_source.read_kafka_stream(
                self.spark, self.config.bootstrap,
                {t: backend.num_partitions(t) for t in self.topology.source_topics()},
                self.config.consumer_config, self.config.max_records_per_batch)
        from .spark import window_counts
        from .spark.source import READER_STAGE_OPTION

        reader = self.spark.readStream.format("streamlib")
        for key, value in self._source_options().items():
            reader = reader.option(key, value)
        if self._plan.window_counts:
            reader = reader.option(window_counts.OPTION, window_counts.encode_inputs(self._plan.window_counts))
        stage = self._plan.reader_stage_option()
        if stage is not None:
            reader = reader.option(READER_STAGE_OPTION, stage)
        return reader.load()

    def _backend_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {}
        if self.config.producer_config:
            config["producer_config"] = self.config.producer_config
        if self.config.consumer_config:
            config["consumer_config"] = self.config.consumer_config
        if self.config.processing_guarantee != "at_least_once":
            config["processing_guarantee"] = self.config.processing_guarantee
        return config

    def _source_options(self) -> dict[str, str]:
        options = {"bootstrap": self.config.bootstrap, "topics": ",".join(self.topology.source_topics()),
                   "applicationId": self.config.application_id,
                   "backendConfig": json.dumps(self._backend_config(), sort_keys=True)}
        if self.config.max_records_per_batch:
            options["maxRecordsPerTrigger"] = str(self.config.max_records_per_batch)
        options["minRecordsPerPartition"] = str(READ_TOGETHER_RECORDS)
        return options

    def _prepare_topics(self, backend: Any) -> int:
        """Check the source topics (they exist, co-partitioned where a stateful step reads
        several), create missing sink topics; return the partition
        count of the inputs (the default number of tasks per stateful stage)."""
        counts = require_input_topics(self.topology, backend)
        self.topology.check_copartitioned(counts)
        partitions = max(counts.values(), default=1)
        outputs = list(self.topology.sink_topics())
        if self.config.deserialization_exception_handler == "dead_letter":
            outputs.append(self.config.dead_letter_topic)
        for topic in outputs:
            backend.create_topic(topic, partitions=partitions, exist_ok=True)
        return partitions

    def _run_batch(self, df: Any, batch_id: int) -> None:
        """``foreachBatch``: one micro-batch (:mod:`streamlib.spark.micro_batch`)."""
        try:
            self._batches.run(df, batch_id)
        except Exception:
            if not self._stopping:
                raise
            from .spark.stopping import batch_interrupted

            # stop() cancelled this batch: say so in the one short line Spark takes for
            # a clean stop, not with the cancelled job's Java trace (streamlib.spark.stopping).
            raise batch_interrupted(batch_id) from None

    # -- queries --------------------------------------------------------------------------
    def _interactive(self) -> Any:
        if self._queries is None:
            from .query.service import Queries
            from .topics.spec import BackendSpec

            backend = BackendSpec.from_options(self._source_options())
            self._queries = Queries(self.topology, self.config, backend.open)
        return self._queries

    def store(self, name: str) -> Any:
        """A read-only view of store ``name`` across all tasks: every call reads one
        committed batch (the newest the query replicas have applied), never part of one."""
        return self._interactive().store(name)

    def table(self, name: str) -> Any:
        """Store ``name``'s content as a Spark DataFrame (``key``, ``value``; window and
        session stores: ``key``, ``window_start``, ``window_end``, ``value``) as of the
        newest committed batch, read by Spark tasks, one per store partition; also a
        temporary view called ``name`` that moves to every newer batch (SQL over live
        state)."""
        from .spark.store_source import StoreColumns, store_dataframe

        queries = self._interactive()
        d = queries.store_def(name)
        columns = StoreColumns(d.kind, d.key_serde or self.config.default_key_serde,
                               d.value_serde or self.config.default_value_serde, d.window_size_ms)

        def register(copy: Any) -> Any:   # called again for every newer batch
            df = store_dataframe(self.spark, copy, columns)
            df.createOrReplaceTempView(_view_name(name))
            return df

        return queries.table(name, register)

    def metrics(self) -> dict[str, Any]:
        """Counters since start, per-task state, store sizes, lag and watermark.

        ``estimated_store_sizes`` (store -> entries over its tasks) is RocksDB's
        estimate of the number of keys (Kafka Streams' ``estimate-num-keys``): cheap,
        but it may count overwritten or deleted keys not yet compacted away, so it can
        be well above the true count. ``store_sizes`` is the same estimate under its
        older name.

        On a cluster, ``placement`` says where stateful tasks ran: run counts, each task's
        executor, the moves (``moved_tasks``: from, to, ``onto_standby``, records
        restored) and, with ``num_standby_replicas``, ``standbys``: each task's standby
        copies with their executor, lag (changelog records not applied yet) and batch."""
        counters, tasks, last_batch = self._batches.totals()
        result: dict[str, Any] = dict(counters)
        sizes: dict[str, int] = defaultdict(int)
        for metrics in tasks.values():
            for store, entries in metrics.get("stores", {}).items():
                sizes[store] += entries
        times = [m["stream_time"] for m in tasks.values() if m.get("stream_time", -1) >= 0]
        marks = [m["watermark"] for m in tasks.values() if m.get("time_aware")] or times
        result.update(tasks=tasks, estimated_store_sizes=dict(sizes), store_sizes=dict(sizes),
                      last_batch=last_batch,
                      stream_time=max(times, default=-1), watermark=min(marks, default=-1),
                      lag=self._lag())
        return result

    def _lag(self) -> dict[str, dict[int, int]]:
        done = committed_offsets(self._query.lastProgress if self._query is not None else None)
        if not done:
            return {}
        backend = self._plan.backend.open()  # opened once per process, not per call
        return {topic: {p: backend.end_offsets(topic)[p] - off for p, off in parts.items()}
                for topic, parts in done.items()}

    def explain(self) -> str:
        """The Spark plan (logical and physical) of the last micro-batch that ran."""
        return self._plan.last_plan if self._plan is not None else "the application has not started"

    def describe(self) -> str:
        return self.topology.describe(self.config.application_id)

    def __enter__(self) -> "Streams":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _streamlib_errors(call: Any) -> Any:
    """Run ``call``; a failed query carrying a streamlib error raises that error, with a
    short message, and Spark's exception chained underneath."""
    try:
        return call()
    except Exception as exc:
        error = translate(exc)
        if error is None:
            raise
        raise error from exc


def _spark_running() -> bool:
    """Whether a SparkSession is active (without importing pyspark when none can be)."""
    import sys

    if "pyspark" not in sys.modules:
        return False
    from .spark.session import active_session
    return active_session() is not None


def committed_offsets(progress: Optional[dict]) -> dict[str, dict[int, int]]:
    """The source end offsets of the last batch in a query progress report."""
    if not progress or not progress.get("sources"):
        return {}
    end = progress["sources"][0].get("endOffset")
    # Python sources report their offsets as the repr of a dict, not as JSON.
    offsets = ast.literal_eval(end) if isinstance(end, str) else (end or {})
    return {topic: {int(p): off for p, off in parts.items()} for topic, parts in offsets.items()
            if not topic.startswith("@")}  # "@epochs", "@from": see streamlib.spark.log_epochs


def _view_name(store: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in store)

"""Streams.stop() in the middle of a micro-batch: a clean stop, nothing on the console.

Spark cancels the batch's job and interrupts the query thread while it is inside our
``foreachBatch`` function; the failure that function raises used to make Spark's own
check for an interruption overflow the thread's stack (``StackOverflowError``, a
thousand frames of ``java.util.regex.Pattern`` printed by the dying query thread).
"""
from __future__ import annotations

import logging
import re
import time
from pathlib import Path

from streamlib import Consumed, Produced, Serdes, Streams, StreamsBuilder
from streamlib.spark.stopping import batch_interrupted
from engine import Workspace


def slow_topology(marker: Path):
    def hold(key, value):   # runs in the Spark task: tells the test, then keeps the batch busy
        marker.touch()
        time.sleep(60)

    builder = StreamsBuilder()
    (builder.stream("in", consumed=Consumed.with_(Serdes.string(), Serdes.string()))
     .peek(hold).to("out", produced=Produced.with_(Serdes.string(), Serdes.string())))
    return builder.build()


class JvmStderr:
    """What the driver JVM prints to ``System.err`` meanwhile (the uncaught
    exception handler of a dying thread prints there)."""

    def __init__(self, spark):
        self.jvm = spark.sparkContext._jvm

    def __enter__(self) -> "JvmStderr":
        self.original = self.jvm.java.lang.System.err
        self.buffer = self.jvm.java.io.ByteArrayOutputStream()
        self.jvm.java.lang.System.setErr(self.jvm.java.io.PrintStream(self.buffer, True))
        return self

    def __exit__(self, *exc) -> None:
        self.jvm.java.lang.System.setErr(self.original)

    @property
    def text(self) -> str:
        return self.buffer.toString()


def test_stop_during_a_batch_is_clean_and_the_batch_runs_again(spark, tmp_path, caplog):
    ws = Workspace(tmp_path)
    marker = tmp_path / "batch-running"
    ws.produce("in", [("k", "v")])
    app = Streams(slow_topology(marker), ws.config(commit_interval=200), spark=spark)
    app.start()
    query = app._query
    deadline = time.time() + 240
    while not marker.exists():
        assert time.time() < deadline, "the batch never started"
        assert query.isActive, query.exception()
        time.sleep(0.2)
    caplog.set_level(logging.WARNING)
    with JvmStderr(spark) as err:
        started = time.time()
        app.stop()
        stopped_in = time.time() - started
        time.sleep(1)   # a dying query thread prints after stop() has returned
    assert not query.isActive
    assert query.exception() is None   # Spark took it for its own interruption
    assert "StackOverflowError" not in err.text and "Exception in thread" not in err.text, err.text[:2000]
    # Py4J logs a failing callback at ERROR, with its traceback
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert stopped_in < 50   # the task sleeping for 60 s was cancelled, not waited for
    assert not app.is_running
    # The interrupted batch was not committed: its record is still to be processed.
    assert ws.read("out") == []
    assert not (Path(ws.config().resolved_checkpoint_location()) / "commits" / "0").exists()


def test_the_interruption_is_short_and_in_the_form_spark_recognises():
    text = str(batch_interrupted(12))
    # Spark 4.1's StreamExecution.PROXY_ERROR, which must match for a clean stop.
    proxy_error = re.compile(r"py4j\.protocol\.Py4JJavaError: An error occurred while calling"
                             r"((.|\r\n|\r|\n)*)(java\.lang\.InterruptedException|"
                             r"java\.io\.InterruptedIOException|java\.nio\.channels\.ClosedByInterruptException)")
    assert proxy_error.search(text)
    assert len(text) < 300 and "\n" not in text

"""How a micro-batch cut short by ``Streams.stop()`` is handed back to Spark.

``StreamingQuery.stop()`` cancels the running batch's Spark job and interrupts the
query's thread, which may be inside our ``foreachBatch`` function at the time. The
function then fails with a Py4J error that carries the cancelled job's whole Java stack
trace, and Spark receives that as the text of a Python traceback. Spark decides
whether such a failure is its own interruption by matching the text against
``StreamExecution.PROXY_ERROR`` (``An error occurred while calling((.|\\r\\n|\\r|\\n)*)
java.lang.InterruptedException``, Spark 4.1): a regular expression that recurses once
per character, so a text of a few thousand characters overflows the thread's stack.
The stream thread then dies with a ``StackOverflowError`` of a thousand frames on the
console, and a shorter text that does not match makes the stop look like a failure.

So a batch that fails while its application is stopping is reported as one short
line that says what happened in the form Spark recognises: a clean stop. The batch is
not committed; the next start runs it again. Py4J also logs every exception of a
Python callback at ERROR with its traceback; :func:`quiet_stops` keeps this one out.
"""
from __future__ import annotations

import logging
import signal
import sys
import threading
from typing import Any, Optional

from streamlib.spark import internals

#: What Spark's ``PROXY_ERROR`` looks for, before and after any text.
_PROXY_PREFIX = "py4j.protocol.Py4JJavaError: An error occurred while calling"
_INTERRUPTED = "java.lang.InterruptedException"


class BatchInterrupted(Exception):
    """A micro-batch cut short by ``Streams.stop()`` (Spark stops the query cleanly)."""


def batch_interrupted(batch_id: int) -> BatchInterrupted:
    """The exception ``foreachBatch`` raises for micro-batch ``batch_id`` when a stop
    interrupted it: short, and recognised by Spark as an interruption.

    >>> str(batch_interrupted(7))  # doctest: +ELLIPSIS
    'py4j.protocol.Py4JJavaError: An error occurred while calling micro-batch 7: java.lang.InterruptedException...'
    """
    return BatchInterrupted(f"{_PROXY_PREFIX} micro-batch {batch_id}: {_INTERRUPTED} "
                            "(the application was stopped; the batch runs again at the next start)")


class _NotInterruptedBatches(logging.Filter):
    """Drops Py4J's report of a callback that raised :class:`BatchInterrupted`."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], BatchInterrupted))


_FILTER = _NotInterruptedBatches()


def quiet_stops() -> None:
    """Keep Py4J from logging a stopped batch as an error (idempotent)."""
    logger = logging.getLogger("py4j.clientserver")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


#: exit statuses of a process stopped by a signal, as shells report them
_EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143}


class StopSignals:
    """SIGINT/SIGTERM while an application runs: stop it cleanly, say so in one line on
    stderr, exit 130/143.

    PySpark's own SIGINT handler calls the JVM (``cancelAllJobs``) from inside the
    handler; when the signal arrives while the main thread waits in a Py4J call (as in
    ``await_termination``) that second call reads the same socket and fails with
    ``reentrant call``. Here the handler only records the signal: the waits of
    ``Streams`` poll and, seeing it, stop the query (the running batch is cancelled and
    runs again at the next start: nothing of it is committed) and exit. Outside those
    waits (the main thread in the user's own code) the signal is a plain
    ``KeyboardInterrupt`` (SIGINT) or ``SystemExit(143)`` (SIGTERM), without a JVM call.
    """

    def __init__(self) -> None:
        self.received: Optional[int] = None
        self.waiting = False
        self._previous: dict[int, Any] = {}

    def install(self, spark: Any = None) -> None:
        """Take over SIGINT/SIGTERM (from the main thread only; elsewhere a no-op). Under
        spark-submit the JVM is the driver's parent and gets a terminal's Ctrl-C too: it
        is told to ignore SIGINT, so that it does not shut down under the stopping query."""
        if self._previous or threading.current_thread() is not threading.main_thread():
            return
        self.received = None
        for signum in _EXIT:
            self._previous[signum] = signal.signal(signum, self._handle)
        if spark is not None:
            internals.jvm_ignores_sigint(spark)

    def restore(self) -> None:
        """Give the signals back to whoever had them."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _handle(self, signum: int, _frame: Any) -> None:
        if self.received is None:
            self.received = signum
        if self.waiting:
            return   # the wait sees it at its next poll
        self.restore()
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(_EXIT[signum])

    def exit(self) -> None:
        """After the application stopped on a signal: one line, then exit 130/143."""
        signum = self.received
        self.restore()
        name = signal.Signals(signum).name
        sys.stderr.write(f"streamlib: stopped on {name}; the next start continues exactly from the last "
                         f"committed batch\n")
        sys.stderr.flush()
        raise SystemExit(_EXIT[signum])

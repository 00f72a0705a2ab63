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

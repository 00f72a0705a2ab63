"""Spark's logs at a level a user can read: one error, once.

A failed micro-batch reaches the user as streamlib's own exception
(:func:`streamlib.spark.query_errors.translate`), with Spark's exception as its ``__cause__``.
Left alone, Spark reports the same failure four more times on stderr, each with the
whole Python traceback: the executor ("Exception in task"), the task set manager ("Lost
task", "aborting job"), the streaming query ("terminated with error") and Py4J on the
Python side (the ``foreachBatch`` callback that raised). At the default level (WARN for
sessions streamlib creates) those reports are dropped, because the exception the
application raises carries them; ``spark.log.level`` INFO or DEBUG (``--conf
spark.log.level=INFO``, or ``spark.sparkContext.setLogLevel``) keeps all of them. Known
noise is dropped at every level: "Failed to cancel job group ... Cannot find active
jobs" (logged on every stop of a query whose batch had already finished), that
adaptive execution does not apply to streaming queries (every start), and that
streamlib's data sources were registered again.
"""
from __future__ import annotations

import logging
from typing import Any

from streamlib.spark import internals

#: Spark's log level for sessions streamlib creates (and spark-submit sessions that
#: did not set ``spark.log.level``).
DEFAULT_LEVEL = "WARN"

#: JVM loggers whose reports of a failed task or query repeat what the raised error says.
FAILURE_REPORTERS = (
    "org.apache.spark.executor.Executor",
    "org.apache.spark.scheduler.TaskSetManager",
    "org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution",
    "org.apache.spark.sql.execution.streaming.runtime.StreamExecution",
)

#: (logger, regular expression of whole messages) that are noise at every level.
NOISE = (
    ("org.apache.spark.scheduler.DAGScheduler", r"Failed to cancel job group .*Cannot find active jobs.*"),
    # on every start of a query: adaptive execution is for batch queries (app.table) too
    ("org.apache.spark.sql.execution.streaming.runtime.ResolveWriteToStream",
     r"spark\.sql\.adaptive\.enabled is not supported in streaming.*"),
    # registering streamlib's sources again on a session (each Streams does) is harmless
    ("org.apache.spark.sql.execution.datasources.DataSourceManager",
     r"The data source streamlib(-store|-clock)? replaced a previously registered data source\."),
)

_QUIET_LEVELS = ("WARN", "ERROR", "FATAL", "OFF")
#: Spark applications (by id) whose logs are already set up.
_DONE: set[str] = set()


def quiet_spark_logs(spark: Any) -> None:
    """Drop Spark's repeated failure reports (unless its log level is INFO or finer)
    and its known noise; idempotent, safe on any session.

    Python sessions only reach the JVM's log4j through Py4J; a session without it (Spark
    Connect) is left as it is.
    """
    _quiet_py4j_callbacks()
    log4j = internals.log4j(spark)
    if log4j is None or spark.sparkContext.applicationId in _DONE:
        return
    _DONE.add(spark.sparkContext.applicationId)
    logs = log4j.LogManager.getContext(False)
    config = logs.getConfiguration()
    if str(config.getRootLogger().getLevel()) in _QUIET_LEVELS:
        for name in FAILURE_REPORTERS:
            log4j.core.config.Configurator.setLevel(name, log4j.Level.OFF)
    deny, neutral = log4j.core.Filter.Result.DENY, log4j.core.Filter.Result.NEUTRAL
    for name, pattern in NOISE:
        logger = config.getLoggerConfig(name)
        if logger.getName() != name:
            # a config of its own for the filter, with no level: it follows the root's
            # level (and spark.log.level) as before
            logger = log4j.core.config.LoggerConfig(name, None, True)
            config.addLogger(name, logger)
        logger.addFilter(log4j.core.filter.RegexFilter.createFilter(pattern, None, False, deny, neutral))
    logs.updateLoggers()


class _RepeatedCallbackFailure(logging.Filter):
    """Drops Py4J's ERROR report of a Python callback that raised: Spark gets that
    exception back and the query fails with it, so it is raised to the user anyway."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR or record.exc_info is None:
            return True
        return logging.getLogger("py4j").isEnabledFor(logging.DEBUG)


_CALLBACK_FILTER = _RepeatedCallbackFailure()


def _quiet_py4j_callbacks() -> None:
    logger = logging.getLogger("py4j.clientserver")
    if _CALLBACK_FILTER not in logger.filters:
        logger.addFilter(_CALLBACK_FILTER)

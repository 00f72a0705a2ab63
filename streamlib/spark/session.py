"""Spark session creation with streamlib's defaults and data source registration."""
from __future__ import annotations

import os
import sys
from typing import Mapping, Optional

from pyspark.sql import SparkSession

from _streamlib_spark_path import SESSION_VARIABLE

from streamlib.spark import internals
from streamlib.spark.java_check import require_java
from streamlib.spark.kafka_source import fetched_jars_conf
from streamlib.spark.logs import DEFAULT_LEVEL, quiet_spark_logs
from streamlib.state.restore_bar import ENABLE as RESTORE_BARS

#: Defaults for a session streamlib creates itself (never forced on an existing one).
LOCAL_DEFAULTS: dict[str, str] = {
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.python.worker.reuse": "true",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}

#: Log4j 2 configuration of the JVMs of sessions streamlib starts (not of spark-submit's).
LOG4J_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")

#: Spark's Python daemon, minus pyspark's source zip on the path (see :mod:`streamlib.spark.daemon`).
#: Set on every session streamlib creates, spark-submit's included, unless already configured.
DAEMON_MODULE = ("spark.python.daemon.module", "streamlib.spark.daemon")
#: Marks the Python processes Spark starts for a session streamlib creates (its daemon,
#: workers, data source planners and streaming source runners): only there does
#: ``streamlib-spark-path.pth`` act (see :mod:`_streamlib_spark_path`).
SESSION_ENV = (f"spark.executorEnv.{SESSION_VARIABLE}", "1")


def register_data_sources(spark: SparkSession) -> SparkSession:
    """Register the ``streamlib`` data source (topics reader and writer),
    ``streamlib-store`` (``Streams.table``) and ``streamlib-clock`` on ``spark``.

    Registering again is harmless, so this is safe on a session made by spark-submit.
    Spark's repeated reports of a failure streamlib raises, and its known noise, are
    dropped from its logs (:mod:`streamlib.spark.logs`).

    >>> spark = get_or_create_session()
    >>> register_data_sources(spark) is spark
    True
    """
    from streamlib.spark.clock import ClockDataSource
    from streamlib.spark.source import TopicDataSource
    from streamlib.spark.store_source import StoreDataSource

    quiet_spark_logs(spark)
    show_restore_bars(spark)
    mark_streamlib_processes(spark)
    spark.dataSource.register(TopicDataSource)
    spark.dataSource.register(StoreDataSource)
    spark.dataSource.register(ClockDataSource)
    return spark


def show_restore_bars(spark: SparkSession) -> None:
    """Turn on the bars of long store restores (:mod:`streamlib.state.restore_bar`) in the
    Python workers of a local session whose driver writes to a terminal: their stderr is
    then that terminal. The environment goes to every Python function made afterwards."""
    try:
        context = spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect: no workers of ours to tell
        return
    if context.master.startswith("local") and sys.stderr.isatty():
        context.environment[RESTORE_BARS] = "1"


def mark_streamlib_processes(spark: SparkSession) -> None:
    """Have the Python processes Spark starts for the functions made in ``spark`` from now
    on (streamlib's data sources, their planners and read tasks, its stages) marked as
    streamlib's, as a session streamlib creates marks them all (:data:`SESSION_ENV`):
    ``streamlib-spark-path.pth`` then spares each of them importing pyspark from Spark's
    archives (:mod:`_streamlib_spark_path`). A session made by someone else gets it only
    once it is handed to streamlib (``Streams(spark=...)``, :func:`register_data_sources`);
    Spark keys its Python workers by their environment, so functions made before that
    keep their own, unmarked workers."""
    try:
        context = spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect: no Python processes of ours to mark
        return
    context.environment[SESSION_VARIABLE] = SESSION_ENV[1]


def _configured(key: str, submitted: bool) -> bool:
    """Whether spark-submit (``--conf``, ``spark-defaults.conf``) already set ``key``."""
    return submitted and internals.submitted_conf_contains(key)


def active_session() -> Optional[SparkSession]:
    """The active SparkSession of this thread or process, ``None`` if there is none."""
    return SparkSession.getActiveSession()


def _quiet_log_conf() -> dict[str, str]:
    """The JVM of a session streamlib starts logs with :data:`LOG4J_CONFIG` (Spark's
    defaults at WARN, minus the warnings every local run prints), and binds to the
    loopback address unless ``SPARK_LOCAL_IP`` says otherwise (a local session needs no
    other; Spark warns about a hostname resolving to loopback otherwise)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    return {"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J_CONFIG}"}


def get_or_create_session(master: Optional[str] = None, app_name: str = "streamlib",
                          conf: Optional[Mapping[str, str]] = None) -> SparkSession:
    """The active SparkSession, or a new one with local defaults, with streamlib registered.

    Java is checked before a JVM is started, so a missing Java gives one clear line
    (:class:`~streamlib.spark.java_check.JavaNotFound`) instead of a Py4J trace. A new
    session gets ``master`` (default ``local[2]``) and :data:`LOCAL_DEFAULTS` overlaid
    with ``conf``; under spark-submit only ``master``/``conf`` are added to what was
    submitted, and an existing session keeps its settings.

    >>> spark = get_or_create_session(conf={"spark.sql.shuffle.partitions": "2"})
    >>> spark.read.format("streamlib")  # doctest: +ELLIPSIS
    <...DataFrameReader...>
    """
    spark = SparkSession.getActiveSession()
    if spark is None:
        submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit already runs a JVM
        if not submitted:
            require_java()
        # Spark's Kafka source, when `make jars` fetched it (streamlib.spark.kafka_source).
        settings = {} if submitted else {"spark.master": "local[2]", **LOCAL_DEFAULTS,
                                         **fetched_jars_conf()}
        # Python workers (UDFs and data source planners alike) must run this
        # interpreter, the one with streamlib installed, not the first `python3` on
        # PATH (under spark-submit too, when only PYSPARK_DRIVER_PYTHON named it);
        # the JVM and its workers inherit the environment.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if not _configured(DAEMON_MODULE[0], submitted):
            settings[DAEMON_MODULE[0]] = DAEMON_MODULE[1]
        if submitted and not _configured("spark.log.level", submitted):
            settings["spark.log.level"] = DEFAULT_LEVEL
        settings[SESSION_ENV[0]] = SESSION_ENV[1]
        settings.update(conf or {})
        if not submitted:   # (under spark-submit, spark.jars is the user's: loaded later instead)
            settings["spark.jars"] = ",".join(filter(None, [settings.get("spark.jars"), internals.PLACEMENT_JAR]))
        if master is not None:
            settings["spark.master"] = master
        if not submitted and settings["spark.master"].startswith("local"):
            settings = {**_quiet_log_conf(), **settings}   # Spark's log level: WARN (conf spark.log.level)
        builder = SparkSession.builder.appName(app_name)
        for key, value in settings.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    return register_data_sources(spark)

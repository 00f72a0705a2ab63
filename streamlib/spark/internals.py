"""Every use of PySpark's, Py4J's and the JVM's private internals, in one module.

streamlib reaches past PySpark's public API in a few places, each to save time per
micro-batch (Py4J round trips, re-analysis of a plan that did not change) or per
process start; none is needed for a correct result. Private APIs change between Spark
releases without notice, so each use here has a public fallback: when the internal is
missing or its signature changed (``AttributeError``, ``ImportError``, ``TypeError``,
or Py4J saying the Java method does not exist) the public path runs instead, from then
on for the rest of the process, and a warning names the internal once. Errors Spark
itself raises (an analysis error, a failed job) are never taken for a missing internal.

``STREAMLIB_SPARK_INTERNALS=off`` in the environment runs every public path from the
start (how the tests prove the fallbacks give the same results). No other module of
streamlib touches a private Spark API (``tests/spark/test_spark_internals.py`` checks it).
"""
from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import runpy
import socket
from typing import Any, Callable, Hashable, Iterable, Optional, TypeVar

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.functions import pandas_udf

log = logging.getLogger("streamlib")
T = TypeVar("T")

#: Set to ``off`` to use only PySpark's public API.
SWITCH = "STREAMLIB_SPARK_INTERNALS"
#: Internals found missing or changed in this process (their fallbacks run instead).
_broken: set[str] = set()


def enabled(name: str) -> bool:
    """Whether the internal ``name`` is (still) used in this process."""
    return name not in _broken and os.environ.get(SWITCH, "on").lower() != "off"


def _is_missing(exc: BaseException) -> bool:
    """Whether ``exc`` says a private API is gone or changed (not that Spark failed)."""
    if isinstance(exc, (AttributeError, ImportError, TypeError)):
        return True
    try:
        from py4j.protocol import Py4JError, Py4JJavaError
    except ImportError:
        return False
    # A Java method that does not exist (or takes other arguments) is a plain Py4JError;
    # an exception thrown by the method itself is a Py4JJavaError (or PySpark's own).
    return isinstance(exc, Py4JError) and not isinstance(exc, Py4JJavaError)


def _attempt(name: str, private: Callable[[], T], public: Callable[[], T]) -> T:
    """``private()``, or ``public()`` when the internal ``name`` is off or missing."""
    if enabled(name):
        try:
            return private()
        except Exception as exc:  # noqa: BLE001 - sorted by _is_missing
            if not _is_missing(exc):
                raise
            _broken.add(name)
            log.warning("streamlib: Spark internal %s is not available in this PySpark (%s: %s); "
                        "using the public API from now on", name, type(exc).__name__, exc)
    return public()


def _frame(jdf: Any, session: SparkSession) -> DataFrame:
    return DataFrame(jdf, session)


# -- processes: Spark's daemon, the submitted configuration, pickling -------------------------

def run_spark_daemon(wrap_worker_main: Callable[[Callable], Callable]) -> None:
    """Run Spark's daemon with its worker entry wrapped, the way the PR that made
    ``spark.python.daemon.module`` configurable (SPARK-22959) shows: replace
    ``pyspark.daemon.worker_main``, then call ``manager()``. PySpark 4.3 looks its worker
    entry up inside each forked worker instead (no ``worker_main`` to replace): there the
    daemon runs as it is."""
    from pyspark import daemon

    main = getattr(daemon, "worker_main", None)
    if enabled("pyspark.daemon.worker_main") and callable(main):
        daemon.worker_main = wrap_worker_main(main)
    manager = getattr(daemon, "manager", None)
    if callable(manager):
        manager()
    else:
        runpy.run_module("pyspark.daemon", run_name="__main__")


def submitted_conf_contains(key: str) -> bool:
    """Whether spark-submit (``--conf``, ``spark-defaults.conf``) set ``key``, read from
    its JVM before any session exists. Fallback: True (streamlib then leaves the key
    to the user rather than risk overriding a choice it cannot see)."""

    def private() -> bool:
        from pyspark import SparkConf, SparkContext

        SparkContext._ensure_initialized()  # connects to spark-submit's JVM, whose conf we read
        return SparkConf().contains(key)

    return _attempt("SparkContext._ensure_initialized", private, lambda: True)


def cloudpickle() -> Any:
    """The cloudpickle PySpark ships (it pickles what Spark's workers unpickle), or the
    ``cloudpickle`` package."""
    try:
        from pyspark import cloudpickle as shipped

        if enabled("pyspark.cloudpickle"):
            return shipped
    except ImportError:
        pass
    import cloudpickle as package  # the same library, when PySpark stops shipping it

    return package


# -- Java sequences kept across micro-batches (streamlib.spark.exprs) ---------------------------

def jvm_key() -> Hashable:
    """Identifies the JVM this process talks to (a new gateway starts afresh)."""

    def private() -> Hashable:
        from pyspark import SparkContext

        return id(SparkContext._gateway)

    def public() -> Hashable:
        session = SparkSession.getActiveSession()
        return None if session is None else session.sparkContext.applicationId

    return _attempt("SparkContext._gateway", private, public)


def java_seq(items: list, as_columns: bool = True) -> Optional[Any]:
    """A Java ``Seq`` of Columns (names made Columns) or, without ``as_columns``, of
    strings; None where that needs an internal that is missing."""

    def private() -> Any:
        from pyspark import SparkContext
        from pyspark.sql.classic.column import _to_java_column, _to_seq

        return _to_seq(SparkContext._active_spark_context, items, _to_java_column if as_columns else None)

    return _attempt("pyspark.sql.classic.column._to_seq", private, lambda: None)


def select(df: DataFrame, seq: Optional[Any], columns: Callable[[], list]) -> DataFrame:
    """``df.select(*columns())``, through the kept Java ``seq`` when there is one."""
    if not _given(seq):
        return df.select(*columns())
    return _attempt("Dataset.select(Seq)", lambda: _frame(df._jdf.select(seq), df.sparkSession),
                    lambda: df.select(*columns()))


def with_columns(df: DataFrame, names: Optional[Any], values: Optional[Any],
                 columns: Callable[[], dict[str, Column]]) -> DataFrame:
    """``df.withColumns(columns())``, through the kept Java sequences when there are some."""
    if not _given(names, values):
        return df.withColumns(columns())
    return _attempt("Dataset.withColumns(Seq, Seq)",
                    lambda: _frame(df._jdf.withColumns(names, values), df.sparkSession),
                    lambda: df.withColumns(columns()))


def repartition(df: DataFrame, partitions: Optional[int], seq: Optional[Any], column: str) -> DataFrame:
    """``df.repartition(partitions, column)`` (Spark's shuffle partitions when None)."""

    def private() -> DataFrame:
        jdf = df._jdf.repartition(seq) if partitions is None else df._jdf.repartition(partitions, seq)
        return _frame(jdf, df.sparkSession)

    def public() -> DataFrame:
        return df.repartition(column) if partitions is None else df.repartition(partitions, column)

    return _attempt("Dataset.repartition(Seq)", private, public) if _given(seq) else public()


def group_aggregate(df: DataFrame, by_seq: Optional[Any], rest_seq: Optional[Any], by: Callable[[], list],
                    aggregates: list[Column]) -> DataFrame:
    """``df.groupBy(*by()).agg(*aggregates)``, through the kept Java sequences."""

    def private() -> DataFrame:
        grouped = df._jdf.groupBy(by_seq)
        return _frame(grouped.agg(aggregates[0]._jc, rest_seq), df.sparkSession)

    def public() -> DataFrame:
        return df.groupBy(*by()).agg(*aggregates)

    return _attempt("Dataset.groupBy(Seq).agg", private, public) if _given(by_seq, rest_seq) else public()


def _given(*seqs: Optional[Any]) -> bool:
    """Whether the Java sequences a private call needs were made (:func:`java_seq`)."""
    return all(seq is not None for seq in seqs)


# -- the lowering's per-batch shortcuts ---------------------------------------------------------

def session_token(session: SparkSession) -> Any:
    """What stays the same while Spark's session does: ``foreachBatch`` wraps the query's
    one Java session in a new Python ``SparkSession`` every batch. Fallback: the Python
    session (then a frame kept per session is rebuilt each batch: slower, same result)."""
    return _attempt("SparkSession._jsparkSession", lambda: session._jsparkSession, lambda: session)


def same_session(token: Any, session: SparkSession) -> bool:
    """Whether ``token`` (:func:`session_token`) is ``session``'s."""
    mine = session_token(session)
    if isinstance(mine, SparkSession) or isinstance(token, SparkSession):
        return mine is token
    return bool(token.equals(mine))


class ArrowStage:
    """A ``mapInArrow`` function made into a UDF once (``mapInArrow`` makes it anew every
    call: it pickles the function and hands it to the JVM, 15 ms a batch)."""

    def __init__(self, function: Callable, ddl: str, columns: Iterable[str]):
        self.function = function
        self.ddl = ddl
        self.udf = _attempt("pandas_udf(SQL_MAP_ARROW_ITER_UDF)", lambda: _arrow_udf(function, ddl, columns),
                            lambda: None)

    def apply(self, rows: DataFrame) -> DataFrame:
        """``rows.mapInArrow(function, ddl)``, through the UDF made once when there is one."""
        def public() -> DataFrame:
            return rows.mapInArrow(self.function, self.ddl)

        if self.udf is None:
            return public()
        return _attempt("Dataset.mapInArrow(Column)",
                        lambda: _frame(rows._jdf.mapInArrow(self.udf._jc, False, None), rows.sparkSession), public)


def _arrow_udf(function: Callable, ddl: str, columns: Iterable[str]) -> Column:
    from pyspark.util import PythonEvalType

    udf = pandas_udf(function, returnType=ddl, functionType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF)
    # The UDF refers to its input columns by name, so one serves every batch's plan.
    return udf(*[F.col(f"`{name}`") for name in columns])


def plan_text(df: DataFrame) -> str:
    """Spark's plans (logical and physical) of ``df``, as ``explain(extended=True)`` shows them."""

    def public() -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            df.explain(extended=True)
        return out.getvalue()

    return _attempt("QueryExecution.toString", lambda: str(df._jdf.queryExecution().toString()), public)


def observed_metrics(df: DataFrame) -> Optional[dict[str, dict]]:
    """The metrics ``df.observe(name, ...)`` collected in ``df``'s last run, by name, as
    plain values (``{name: {alias: value}}``); None where they cannot be read."""

    def private() -> dict[str, dict]:
        observed = df._jdf.queryExecution().observedMetrics()
        names = observed.keys().toSeq()
        found = {}
        for i in range(names.size()):
            name = names.apply(i)
            found[name] = json.loads(observed.apply(name).json())
        return found

    return _attempt("QueryExecution.observedMetrics", private, lambda: None)


def can_read_observed_metrics(session: SparkSession) -> bool:
    """Whether :func:`observed_metrics` works here, known before a plan relies on it
    (tried once per JVM on an empty frame)."""
    key = jvm_key()
    if key not in _observable:
        _observable[key] = observed_metrics(session.range(0).observe("streamlib_probe", F.count("*"))) is not None
    return _observable[key] and enabled("QueryExecution.observedMetrics")


_observable: dict[Hashable, bool] = {}


# -- plan templates (streamlib.spark.plan_template) ---------------------------------------------

class CapturedPlan:
    """An analyzed Catalyst plan and its leaf, to be put over another leaf later."""

    def __init__(self, plan: Any, leaf: Any, session: SparkSession):
        self.plan = plan
        self.leaf = leaf
        self.output = leaf.output()
        self.session = session._jsparkSession
        jvm = session._jvm
        # looked up once: each package step of a JVM name is a round trip
        self.utils = jvm.org.apache.spark.api.python.PythonUtils
        self.dataset = jvm.org.apache.spark.sql.classic.Dataset


def capture_plan(result: DataFrame, source: DataFrame, static_leaves: frozenset[str]) -> Optional[CapturedPlan]:
    """``result``'s analyzed plan, if its leaves are ``source``'s one leaf or classes in
    ``static_leaves``; None otherwise, or without the internals (no template: every batch
    is planned afresh)."""

    def private() -> Optional[CapturedPlan]:
        plan = result._jdf.queryExecution().analyzed()
        leaf = source._jdf.queryExecution().analyzed()
        leaves = plan.collectLeaves()
        for i in range(leaves.size()):
            found = leaves.apply(i)
            if not (found.equals(leaf) or found.getClass().getName() in static_leaves):
                return None
        if leaf.collectLeaves().size() != 1:
            return None
        return CapturedPlan(plan, leaf, source.sparkSession)

    return _attempt("LogicalPlan.transformUp", private, lambda: None)


def instantiate_plan(captured: CapturedPlan, source: DataFrame) -> Optional[DataFrame]:
    """The captured plan over ``source``'s leaf, or None if ``source`` does not fit it."""

    def private() -> Optional[DataFrame]:
        session = source.sparkSession
        leaf = source._jdf.queryExecution().analyzed()
        if not (session._jsparkSession.equals(captured.session) and leaf.output().equals(captured.output)):
            return None
        # A Scala Map is a PartialFunction: the one rule transformUp applies.
        plan = captured.plan.transformUp(captured.utils.toScalaMap({captured.leaf: leaf}))
        # Its nodes are the analyzed template's: the analyzer need not resolve them again.
        plan.setAnalyzed()
        return _frame(captured.dataset.ofRows(session._jsparkSession, plan), session)

    return _attempt("LogicalPlan.transformUp", private, lambda: None)


# -- checkpoint files (streamlib.spark.checkpoint_files) ----------------------------------------

def on_local_files(spark: SparkSession, path: str) -> bool:
    """Whether Spark resolves ``path`` to the local file system (``fs.defaultFS`` may not
    be). Fallback: the path's scheme, or the default file system's when it has none."""

    def private() -> bool:
        hadoop_conf = spark._jsparkSession.sessionState().newHadoopConf()
        return spark.sparkContext._jvm.org.apache.hadoop.fs.Path(path).getFileSystem(hadoop_conf).getScheme() == "file"

    def public() -> bool:
        scheme = path.partition("://")[0] if "://" in path else None
        if scheme is None:
            default = spark.conf.get("spark.hadoop.fs.defaultFS", None) or "file:///"
            scheme = default.partition(":")[0]
        return scheme == "file"

    return _attempt("Path.getFileSystem", private, public)


def jvm_class_exists(spark: SparkSession, name: str) -> bool:
    """Whether the driver's JVM has the class ``name`` (a Spark-internal class streamlib
    names in a setting). Fallback: False, so the setting is left alone."""

    def private() -> bool:
        from py4j.protocol import Py4JJavaError

        try:
            spark.sparkContext._jvm.java.lang.Class.forName(name)
        except Py4JJavaError:   # ClassNotFoundException: this Spark moved or dropped it
            return False
        return True

    return _attempt("java.lang.Class.forName", private, lambda: False)


def log4j(spark: SparkSession) -> Optional[Any]:
    """The driver JVM's ``org.apache.logging.log4j`` package (to quiet Spark's repeated
    failure reports), or None: a session without a JVM gateway (Spark Connect), or a
    Py4J without ``_jvm``. Fallback: None, so Spark's logging is left as it is."""

    def private() -> Optional[Any]:
        jvm = spark.sparkContext._jvm
        return None if jvm is None else jvm.org.apache.logging.log4j

    def public() -> Optional[Any]:
        return None

    try:
        return _attempt("log4j through Py4J", private, public)
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext to reach
        return None


# -- sticky placement (streamlib.spark.placement) -----------------------------------------------

#: streamlib's JVM piece: an RDD whose partitions prefer an executor (jvm/placement/)
PLACEMENT_JAR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jars", "streamlib-placement.jar")
PLACEMENT_CLASS = "streamlib.placement.Placement"


def _placement_class(spark: SparkSession) -> Optional[Any]:
    from py4j.java_gateway import JavaClass

    found = spark.sparkContext._jvm.streamlib.placement.Placement
    return found if isinstance(found, JavaClass) else None


def load_placement(spark: SparkSession) -> bool:
    """Whether the placement classes are in the driver's JVM, adding the jar to a running
    session's driver (its gateway's class loader) and executors (``addJar``) when they are
    not (a session streamlib starts has it in ``spark.jars``). Fallback: False."""

    def private() -> bool:
        if _placement_class(spark) is not None:
            return True
        jvm = spark.sparkContext._jvm
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        loader.addURL(jvm.java.io.File(PLACEMENT_JAR).toURI().toURL())
        spark.sparkContext._jsc.sc().addJar(PLACEMENT_JAR)
        return _placement_class(spark) is not None

    return _attempt("streamlib placement jar", private, lambda: False)


def placement_runs(spark: SparkSession) -> Optional[Any]:
    """A new JVM accumulator of where placed partitions ran (:func:`placed_rows`)."""
    return _attempt("streamlib placement jar",
                    lambda: _placement_class(spark).runs(spark.sparkContext._jsc.sc(), "streamlib placement"),
                    lambda: None)


def take_placement_runs(spark: SparkSession, runs: Any) -> list[str]:
    """The runs ``runs`` collected since the last call (``"<label> <partition> <executor
    id> <host>"`` each), then emptied."""
    return _attempt("streamlib placement jar", lambda: list(_placement_class(spark).take(runs)), lambda: [])


def live_executors(spark: SparkSession) -> list[str]:
    """Spark's locations (``executor_<host>_<id>``) of the executors alive now, sorted."""
    return _attempt("streamlib placement jar", lambda: list(_placement_class(spark).liveExecutors()), lambda: [])


def known_executors(spark: SparkSession) -> list[str]:
    """:func:`live_executors` if the placement classes are already loaded, else ``[]``
    (not known; this never loads them)."""

    def private() -> list[str]:
        found = _placement_class(spark)
        return [] if found is None else list(found.liveExecutors())

    return _attempt("streamlib placement jar", private, lambda: [])


def placed_rows(rows: DataFrame, label: str, locations: list[Optional[str]], runs: Any,
                only_there: bool = False) -> DataFrame:
    """``rows`` whose partition ``i`` prefers ``locations[i]`` (None: anywhere) and adds
    where it ran to ``runs``: a new plan over the RDD of ``rows``' plan (Spark plans it
    here, and a plan template cannot replay it). ``only_there``: a partition that runs on
    another executor than its location yields no rows. Fallback: ``rows`` as they are
    (with ``only_there``: nothing is run at all, an error is raised)."""

    def private() -> DataFrame:
        spark = rows.sparkSession
        gateway = spark.sparkContext._gateway
        array = gateway.new_array(gateway.jvm.java.lang.String, len(locations))
        for i, location in enumerate(locations):
            array[i] = location
        placement = _placement_class(spark)
        placed = (placement.placeOnly if only_there else placement.place)(rows._jdf, label, array, runs)
        return _frame(placed, spark)

    def fallback() -> DataFrame:
        if only_there:
            raise RuntimeError("streamlib placement jar: cannot place rows on given executors only")
        return rows

    return _attempt("streamlib placement jar", private, fallback)


def packed_rows(rows: DataFrame, label: str, group_of: list[int], locations: list[Optional[str]],
                runs: Any) -> DataFrame:
    """As :func:`placed_rows`, with several of ``rows``' partitions per partition: partition
    ``i`` of ``rows`` joins group ``group_of[i]``, and group ``g`` (one partition, its
    members read in order) prefers ``locations[g]``. Fallback: ``rows`` as they are."""

    def private() -> DataFrame:
        spark = rows.sparkSession
        gateway = spark.sparkContext._gateway
        groups = gateway.new_array(gateway.jvm.int, len(group_of))
        for i, group in enumerate(group_of):
            groups[i] = group
        array = gateway.new_array(gateway.jvm.java.lang.String, len(locations))
        for g, location in enumerate(locations):
            array[g] = location
        return _frame(_placement_class(spark).pack(rows._jdf, label, groups, array, runs), spark)

    return _attempt("streamlib placement jar", private, lambda: rows)


def jvm_ignores_sigint(spark: SparkSession) -> None:
    """Have the driver JVM ignore SIGINT (``sun.misc.Signal`` through Py4J), so that a
    terminal's Ctrl-C under ``spark-submit`` reaches streamlib's stop and not the JVM's
    shutdown. Fallback: nothing (a JVM without ``sun.misc``: Ctrl-C reaches it)."""

    def private() -> None:
        jvm = spark.sparkContext._jvm
        jvm.sun.misc.Signal.handle(jvm.sun.misc.Signal("INT"), jvm.sun.misc.SignalHandler.SIG_IGN)

    try:
        _attempt("sun.misc.Signal through Py4J", private, lambda: None)
    except Exception as exc:   # noqa: BLE001 - a JVM that refuses: Ctrl-C reaches it
        log.debug("cannot make the JVM ignore SIGINT: %s", exc)


def callback_connection(session: SparkSession) -> Optional[Any]:
    """The Py4J connection on which the JVM called this thread (a ``foreachBatch``
    function's), or None (a thread that calls Java itself, or no such internal)."""
    def private() -> Optional[Any]:
        connection = session.sparkContext._gateway._gateway_client.get_thread_connection()
        return None if connection is None or connection.initiated_from_client else connection

    return _attempt("callback_connection", private, lambda: None)


def end_callback_connection(connection: Any) -> None:
    """Let go of the connection of a query that has stopped. Its JVM thread has ended,
    but Py4J keeps the Python thread that serves it, and its socket, for the process's
    life: one of each per query start (every ``process_available()``). Shutting the
    socket down ends that thread the way a closed connection does."""
    with contextlib.suppress(AttributeError, OSError):
        connection.socket.shutdown(socket.SHUT_RDWR)

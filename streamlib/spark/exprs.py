"""Column expressions built once per process, not once per micro-batch.

Every ``F.col(...)``, ``cast`` or ``F.lit`` is one or more Py4J round trips; a
micro-batch's plan is built from the same expressions each time (only the source
DataFrame is new), and rebuilding them cost about a thousand round trips, 0.2 s, per
batch. A ``Column`` is an unresolved expression, independent of any DataFrame, so it is
safe to apply to every batch's rows. The lists the plan passes to ``select``,
``withColumns`` and ``agg`` are kept as Java ``Seq`` objects the same way
(:func:`selected`, :func:`with_columns`, :func:`aggregated`): PySpark converts a list
element by element, a round trip each, on every call.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable, Optional, TypeVar

from pyspark import SparkContext
from pyspark.sql import Column, DataFrame

T = TypeVar("T")
_BUILT: dict[tuple, Any] = {}


def once(key: Hashable, make: Callable[[], T]) -> T:
    """What ``make()`` builds (Columns, or a list of them), built the first time ``key``
    is asked for in this JVM (a new gateway starts afresh).

    >>> built = []
    >>> first = once(("example",), lambda: built.append(1) or "a Column")
    >>> once(("example",), lambda: built.append(2) or "another") == first, built
    (True, [1])
    """
    full = (id(SparkContext._gateway), key)
    if full not in _BUILT:
        _BUILT[full] = make()
    return _BUILT[full]


def java_seq(key: Hashable, make: Callable[[], list]) -> Any:
    """The Java ``Seq`` of the Columns (or column names) ``make()`` builds, once per JVM:
    PySpark converts a Python list anew for every ``select``, ``withColumns`` or ``agg``,
    one Py4J round trip per element, in every batch."""
    def build() -> Any:
        from pyspark.sql.classic.column import _to_java_column, _to_seq

        return _to_seq(SparkContext._active_spark_context, make(), _to_java_column)

    return once(("java seq", key), build)


def selected(df: DataFrame, key: Hashable, make: Callable[[], list]) -> DataFrame:
    """``df.select(*make())``, the list converted once (:func:`java_seq`)."""
    return DataFrame(df._jdf.select(java_seq(("select", key), make)), df.sparkSession)


def with_columns(df: DataFrame, key: Hashable, make: Callable[[], dict[str, Column]]) -> DataFrame:
    """``df.withColumns(make())``, the names and Columns converted once (:func:`java_seq`)."""
    from pyspark.sql.classic.column import _to_seq

    columns = once(("with columns", key), make)
    names = once(("with column names", key), lambda: _to_seq(SparkContext._active_spark_context, list(columns)))
    values = java_seq(("with columns", key), lambda: list(columns.values()))
    return DataFrame(df._jdf.withColumns(names, values), df.sparkSession)


def by_key(df: DataFrame, partitions: Optional[int] = None) -> DataFrame:
    """``df.repartition(partitions, "key")`` (``spark.sql.shuffle.partitions`` when
    ``partitions`` is None), the column list converted once (:func:`java_seq`)."""
    key = java_seq(("repartition by",), lambda: ["key"])
    jdf = df._jdf.repartition(key) if partitions is None else df._jdf.repartition(partitions, key)
    return DataFrame(jdf, df.sparkSession)


def aggregated(df: DataFrame, key: Hashable, by: Callable[[], list], aggregates: Callable[[], list[Column]]
               ) -> DataFrame:
    """``df.groupBy(*by()).agg(*aggregates())``, the lists converted once (:func:`java_seq`)."""
    columns = once(("aggregates", key), aggregates)
    grouped = df._jdf.groupBy(java_seq(("group by", key), by))
    return DataFrame(grouped.agg(columns[0]._jc, java_seq(("aggregates", key), lambda: columns[1:])),
                     df.sparkSession)

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

from pyspark.sql import Column, DataFrame

from streamlib.spark import internals

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
    full = (internals.jvm_key(), key)
    if full not in _BUILT:
        _BUILT[full] = make()
    return _BUILT[full]


def java_seq(key: Hashable, make: Callable[[], list]) -> Optional[Any]:
    """The Java ``Seq`` of the Columns (or column names) ``make()`` builds, once per JVM:
    PySpark converts a Python list anew for every ``select``, ``withColumns`` or ``agg``,
    one Py4J round trip per element, in every batch. None without the internals
    (:mod:`streamlib.spark.internals`): the public call then converts each time."""
    return once(("java seq", key), lambda: internals.java_seq(make()))


def selected(df: DataFrame, key: Hashable, make: Callable[[], list]) -> DataFrame:
    """``df.select(*make())``, the list converted once (:func:`java_seq`)."""
    return internals.select(df, java_seq(("select", key), make), lambda: once(("select", key), make))


def with_columns(df: DataFrame, key: Hashable, make: Callable[[], dict[str, Column]]) -> DataFrame:
    """``df.withColumns(make())``, the names and Columns converted once (:func:`java_seq`)."""
    columns = once(("with columns", key), make)
    names = once(("with column names", key), lambda: internals.java_seq(list(columns), as_columns=False))
    values = java_seq(("with columns", key), lambda: list(columns.values()))
    return internals.with_columns(df, names, values, lambda: columns)


def by_key(df: DataFrame, partitions: Optional[int] = None) -> DataFrame:
    """``df.repartition(partitions, "key")`` (``spark.sql.shuffle.partitions`` when
    ``partitions`` is None), the column list converted once (:func:`java_seq`)."""
    return internals.repartition(df, partitions, java_seq(("repartition by",), lambda: ["key"]), "key")


def aggregated(df: DataFrame, key: Hashable, by: Callable[[], list], aggregates: Callable[[], list[Column]]
               ) -> DataFrame:
    """``df.groupBy(*by()).agg(*aggregates())``, the lists converted once (:func:`java_seq`)."""
    columns = once(("aggregates", key), aggregates)
    return internals.group_aggregate(df, java_seq(("group by", key), by),
                                     java_seq(("aggregates", key), lambda: columns[1:]),
                                     lambda: once(("group by columns", key), by), columns)

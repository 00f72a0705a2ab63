"""Grouped streams and tables: the aggregations that turn them into tables."""
from __future__ import annotations

from typing import Any, Callable, Optional

from ..node_kinds import AGGREGATE, COUNT, TABLE_AGGREGATE, NodeKind
from ..node_params import AggregateOp
from ..serdes import Serde, Serdes
from .graph import GraphBuilder, require_functions
from .ktable import KTable, materialize
from .options import Materialized


def _count_init() -> int:
    return 0


def _count_add(key: Any, value: Any, agg: int) -> int:
    return agg + 1


def _count_sub(key: Any, value: Any, agg: int) -> int:
    return agg - 1


class GroupingRepartition:
    """The repartition a grouping needs (after a key change; always for a table), made by
    each aggregation of the group as Kafka Streams makes it: the topic is named after the
    ``Grouped`` name (one topic for all the group's aggregations), else after the
    aggregation's store (``<store>-repartition``). ``make(base)`` adds the repartition's
    nodes for topic ``<base>-repartition`` and returns its source node."""

    def __init__(self, make: Callable[[str], str], name: Optional[str]):
        self._make = make
        self._name = name
        self._named_node: Optional[str] = None

    def node_for(self, store: str) -> str:
        """The repartition's source node for the aggregation into ``store``."""
        if self._name is None:
            return self._make(store)
        if self._named_node is None:
            self._named_node = self._make(self._name)
        return self._named_node


class _Grouped:
    def __init__(self, graph: GraphBuilder, node: str, key_serde: Optional[Serde],
                 value_serde: Optional[Serde], repartition: Optional[GroupingRepartition] = None):
        self._graph = graph
        self._node = node
        self.key_serde = key_serde
        self.value_serde = value_serde
        self._repartition = repartition

    def _input(self, store: str) -> str:
        """The node an aggregation into ``store`` reads (behind its repartition, if any)."""
        return self._node if self._repartition is None else self._repartition.node_for(store)

    def _aggregate(self, prefix: str, kind: NodeKind, materialized: Optional[Materialized],
                   value_serde: Optional[Serde], **params: Any) -> KTable:
        key_serde = (materialized and materialized.key_serde) or self.key_serde
        value_serde = (materialized and materialized.value_serde) or value_serde
        store = materialize(self._graph, materialized, prefix, key_serde, value_serde)
        node = self._graph.add(prefix, kind, [self._input(store)], stores=(store,), store=store, **params)
        return KTable(self._graph, node, key_serde, value_serde, store,
                      queryable=bool(materialized and materialized.store_name))


class KGroupedStream(_Grouped):
    """A stream grouped by key, ready to aggregate (or to window)."""

    def count(self, materialized: Optional[Materialized] = None) -> KTable:
        """Count records per key (values are ``int``, Long on the wire)."""
        return self._aggregate("KSTREAM-AGGREGATE", COUNT, materialized, Serdes.long(),
                               initializer=_count_init, aggregator=_count_add, op=AggregateOp.COUNT)

    def reduce(self, reducer: Callable[[Any, Any], Any], materialized: Optional[Materialized] = None) -> KTable:
        """Combine values per key with ``reducer(aggregate, value)``."""
        require_functions("reduce", reducer=reducer)
        return self._aggregate("KSTREAM-REDUCE", AGGREGATE, materialized, self.value_serde,
                               initializer=None, aggregator=reducer, op=AggregateOp.REDUCE)

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  materialized: Optional[Materialized] = None) -> KTable:
        """Fold values per key: ``aggregator(key, value, aggregate)`` from ``initializer()``."""
        require_functions("aggregate", initializer=initializer, aggregator=aggregator)
        return self._aggregate("KSTREAM-AGGREGATE", AGGREGATE, materialized, None,
                               initializer=initializer, aggregator=aggregator, op=AggregateOp.AGGREGATE)


    def windowed_by(self, windows: Any):
        """Aggregate per key and window: ``TimeWindows`` (tumbling, hopping) or
        ``SlidingWindows`` give a ``TimeWindowedKStream``, ``SessionWindows`` a
        ``SessionWindowedKStream``."""
        from .windowed import windowed_by
        return windowed_by(self._graph, self._input, self.key_serde, self.value_serde, windows)


class KGroupedTable(_Grouped):
    """A table re-grouped by a new key: updates subtract the old value from the old
    group and add the new value to the new group (Kafka Streams' ``KGroupedTable``)."""

    def count(self, materialized: Optional[Materialized] = None) -> KTable:
        return self._aggregate("KTABLE-AGGREGATE", TABLE_AGGREGATE, materialized, Serdes.long(),
                               initializer=_count_init, adder=_count_add, subtractor=_count_sub,
                               op=AggregateOp.COUNT)

    def reduce(self, adder: Callable[[Any, Any], Any], subtractor: Callable[[Any, Any], Any],
               materialized: Optional[Materialized] = None) -> KTable:
        require_functions("reduce", adder=adder, subtractor=subtractor)
        return self._aggregate("KTABLE-REDUCE", TABLE_AGGREGATE, materialized, self.value_serde,
                               initializer=None, adder=adder, subtractor=subtractor, op=AggregateOp.REDUCE)

    def aggregate(self, initializer: Callable[[], Any], adder: Callable[[Any, Any, Any], Any],
                  subtractor: Callable[[Any, Any, Any], Any],
                  materialized: Optional[Materialized] = None) -> KTable:
        require_functions("aggregate", initializer=initializer, adder=adder, subtractor=subtractor)
        return self._aggregate("KTABLE-AGGREGATE", TABLE_AGGREGATE, materialized, None,
                               initializer=initializer, adder=adder, subtractor=subtractor,
                               op=AggregateOp.AGGREGATE)

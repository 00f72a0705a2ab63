"""Windowed grouped streams: ``KGroupedStream.windowed_by(...)`` and their aggregations."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..node_kinds import SESSION_AGGREGATE, SLIDING_AGGREGATE, WINDOW_AGGREGATE, NodeKind
from ..node_params import AggregateOp
from ..serdes import Serde, Serdes
from ..state.kinds import StoreKind
from ..topology import StoreDef, TopologyError
from ..windows import EmitStrategy, SessionWindows, SlidingWindows, TimeWindows
from .graph import GraphBuilder, require_functions
from .ktable import KTable
from .options import Materialized


def _count_init() -> int:
    return 0


def _count_add(key: Any, value: Any, agg: int) -> int:
    return agg + 1


def _count_merge(key: Any, agg1: int, agg2: int) -> int:
    return agg1 + agg2


@dataclass(frozen=True)
class _Reducer:
    """Kafka's ``aggregatorForReducer``: the first value starts the aggregate."""

    reducer: Callable[[Any, Any], Any]

    def __call__(self, key: Any, value: Any, agg: Any) -> Any:
        return value if agg is None else self.reducer(agg, value)


@dataclass(frozen=True)
class _ReducerMerger:
    """Kafka's ``mergerForAggregator``: merging two sessions adds one to the other."""

    aggregate: Callable[[Any, Any, Any], Any]

    def __call__(self, key: Any, agg1: Any, agg2: Any) -> Any:
        return self.aggregate(key, agg2, agg1)


@dataclass(frozen=True)
class WindowedKeys:
    """How a windowed table's keys look on the wire: Kafka's windowed serdes."""

    session: bool
    window_size_ms: int = 0

    def serde(self, inner: Serde) -> Serde:
        if self.session:
            return Serdes.session_windowed(inner)
        return Serdes.time_windowed(inner, self.window_size_ms)


class _WindowedStream:
    """What time, sliding and session windowed streams share: store and node."""

    _prefix = "KSTREAM-AGGREGATE"

    def __init__(self, graph: GraphBuilder, input_for: Callable[[str], str], key_serde: Optional[Serde],
                 value_serde: Optional[Serde], windows: Any,
                 emit: EmitStrategy = EmitStrategy.on_window_update()):
        self._graph = graph
        #: store name -> the node an aggregation into that store reads (the grouping's
        #: repartition, named after the store, is made with the aggregation)
        self._input = input_for
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.windows = windows
        self._emit = emit

    def emit_strategy(self, strategy: EmitStrategy) -> "_WindowedStream":
        """Emit every update (default) or one final result per window when it closes
        (``EmitStrategy.on_window_close()``, Kafka's KIP-825), without a suppress buffer."""
        return type(self)(self._graph, self._input, self.key_serde, self.value_serde, self.windows,
                          strategy)

    def _store_def(self, materialized: Optional[Materialized], value_serde: Optional[Serde]) -> tuple:
        named = bool(materialized and materialized.store_name)
        name = materialized.store_name if named else self._graph.internal_store_name(self._prefix)
        key_serde = (materialized and materialized.key_serde) or self.key_serde
        value_serde = (materialized and materialized.value_serde) or value_serde
        retention = (materialized and materialized.retention_ms) or self.windows.retention_ms
        if retention < self.windows.retention_ms:
            # Kafka's Window/SlidingWindow/SessionStoreMaterializer refuse a store that
            # would drop windows (sessions) that can still be updated
            raise ValueError(f"The retention period of the {self._store_kind.label} store {name} must be no "
                             f"smaller than {self._retention_rule()}. Got {self._retention_rule_values()}, "
                             f"retention=[{retention}]")
        store = StoreDef(name, self._store_kind, key_serde, value_serde,
                         logging=materialized.logging if materialized else True, queryable=named,
                         caching=materialized.caching if materialized else True,
                         window_size_ms=self._window_size(), retention_ms=retention,
                         changelog_config=materialized.logging_config if materialized else ())
        self._graph.add_store(store, user_named=named, step=self._prefix)
        return store, named

    def _aggregate(self, kind: NodeKind, materialized: Optional[Materialized], value_serde: Optional[Serde],
                   **params: Any) -> KTable:
        store, named = self._store_def(materialized, value_serde)
        node = self._graph.add(self._prefix, kind, [self._input(store.name)], stores=(store.name,),
                               store=store.name,
                               windows=self.windows, emit_final=self._emit.is_on_window_close,
                               retention_ms=store.retention_ms, **params)
        return KTable(self._graph, node, store.key_serde, store.value_serde, store.name,
                      queryable=named, windowed=self._keys())


    def _retention_rule(self) -> str:
        """What the store's retention must cover, in Kafka's words."""
        raise NotImplementedError

    def _retention_rule_values(self) -> str:
        raise NotImplementedError


class TimeWindowedKStream(_WindowedStream):
    """A grouped stream over tumbling, hopping or sliding windows (Kafka's
    ``TimeWindowedKStream``): ``count``, ``reduce`` and ``aggregate`` per key and window.

    Examples
    --------
    >>> from streamlib import StreamsBuilder, TimeWindows, TopologyTestDriver, Serdes
    >>> builder = StreamsBuilder()
    >>> counts = builder.stream("clicks").group_by_key().windowed_by(TimeWindows.of(1000)).count()
    >>> counts.to_stream().map(lambda w, n: (w.key, f"{w.window.start}:{n}")).to("out")
    >>> with TopologyTestDriver(builder.build()) as driver:
    ...     clicks = driver.create_input_topic("clicks", Serdes.string(), Serdes.string())
    ...     clicks.pipe_input("a", "x", timestamp=10); clicks.pipe_input("a", "y", timestamp=1500)
    ...     driver.create_output_topic("out", Serdes.string(), Serdes.string()).read_values_to_list()
    ['0:1', '1000:1']
    """

    _store_kind = StoreKind.WINDOW

    @property
    def _sliding(self) -> bool:
        return isinstance(self.windows, SlidingWindows)

    def _window_size(self) -> int:
        return self.windows.time_difference_ms if self._sliding else self.windows.size_ms

    def _keys(self) -> WindowedKeys:
        return WindowedKeys(session=False, window_size_ms=self._window_size())

    def _retention_rule(self) -> str:
        return ("2 * time difference plus the grace period" if self._sliding
                else "its window size plus the grace period")

    def _retention_rule_values(self) -> str:
        kind = "time difference" if self._sliding else "size"
        return f"{kind}=[{self._window_size()}], grace=[{self.windows.grace_ms}]"

    def _kind(self) -> NodeKind:
        return SLIDING_AGGREGATE if self._sliding else WINDOW_AGGREGATE

    def count(self, materialized: Optional[Materialized] = None) -> KTable:
        """Records per key and window (``None`` values count too, as in Kafka)."""
        return self._aggregate(self._kind(), materialized, Serdes.long(), initializer=_count_init,
                               aggregator=_count_add, op=AggregateOp.COUNT)

    def reduce(self, reducer: Callable[[Any, Any], Any],
               materialized: Optional[Materialized] = None) -> KTable:
        """Combine values per key and window with ``reducer(aggregate, value)``."""
        require_functions("reduce", reducer=reducer)
        return self._aggregate(self._kind(), materialized, self.value_serde, initializer=None,
                               aggregator=_Reducer(reducer), op=AggregateOp.REDUCE)

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  materialized: Optional[Materialized] = None) -> KTable:
        """Fold values per key and window: ``aggregator(key, value, aggregate)``."""
        require_functions("aggregate", initializer=initializer, aggregator=aggregator)
        return self._aggregate(self._kind(), materialized, None, initializer=initializer,
                               aggregator=aggregator, op=AggregateOp.AGGREGATE)


class SessionWindowedKStream(_WindowedStream):
    """A grouped stream over session windows (Kafka's ``SessionWindowedKStream``)."""

    _store_kind = StoreKind.SESSION

    def _retention_rule(self) -> str:
        return "the session inactivity gap plus the grace period"

    def _retention_rule_values(self) -> str:
        return f"gap=[{self.windows.gap_ms}], grace=[{self.windows.grace_ms}]"

    def _window_size(self) -> int:
        return 0

    def _keys(self) -> WindowedKeys:
        return WindowedKeys(session=True)

    def count(self, materialized: Optional[Materialized] = None) -> KTable:
        return self._aggregate(SESSION_AGGREGATE, materialized, Serdes.long(), initializer=_count_init,
                               aggregator=_count_add, merger=_count_merge, op=AggregateOp.COUNT)

    def reduce(self, reducer: Callable[[Any, Any], Any],
               materialized: Optional[Materialized] = None) -> KTable:
        require_functions("reduce", reducer=reducer)
        aggregate = _Reducer(reducer)
        return self._aggregate(SESSION_AGGREGATE, materialized, self.value_serde, initializer=None,
                               aggregator=aggregate, merger=_ReducerMerger(aggregate), op=AggregateOp.REDUCE)

    def aggregate(self, initializer: Callable[[], Any], aggregator: Callable[[Any, Any, Any], Any],
                  merger: Callable[[Any, Any, Any], Any],
                  materialized: Optional[Materialized] = None) -> KTable:
        """Fold values per key and session; ``merger(key, agg1, agg2)`` joins two
        sessions that a record brings within the inactivity gap of each other."""
        require_functions("aggregate", initializer=initializer, aggregator=aggregator, merger=merger)
        return self._aggregate(SESSION_AGGREGATE, materialized, None, initializer=initializer,
                               aggregator=aggregator, merger=merger, op=AggregateOp.AGGREGATE)


def windowed_by(graph: GraphBuilder, input_for: Callable[[str], str], key_serde: Optional[Serde],
                value_serde: Optional[Serde], windows: Any) -> _WindowedStream:
    """The windowed stream for ``windows`` (time, sliding or session)."""
    if isinstance(windows, SessionWindows):
        return SessionWindowedKStream(graph, input_for, key_serde, value_serde, windows)
    if isinstance(windows, (TimeWindows, SlidingWindows)):
        return TimeWindowedKStream(graph, input_for, key_serde, value_serde, windows)
    raise TopologyError(f"windowed_by() takes TimeWindows, SlidingWindows or SessionWindows, "
                        f"got {windows!r}")


__all__ = ["TimeWindowedKStream", "SessionWindowedKStream", "WindowedKeys", "windowed_by"]

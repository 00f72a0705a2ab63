"""``KStream``: an unbounded stream of key-value records."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from ..node_kinds import (BRANCH, BRANCH_CHILD, COLUMN, FILTER, FLAT_MAP, FLAT_MAP_VALUES, FOREACH, MAP, MAP_VALUES,
                          MERGE, PEEK, PROCESS, PROCESS_VALUES, SELECT_KEY, SINK, STREAM_TABLE_JOIN, TABLE_SOURCE,
                          NodeKind)
from ..node_params import ColumnOp
from ..serdes import Serde
from ..topology import TopologyError
from .graph import GraphBuilder, require_functions
from .options import Grouped, Joined, Materialized, Produced, Repartitioned


def is_column(obj: Any) -> bool:
    """Whether ``obj`` is a pyspark ``Column`` (checked by name: the DSL imports no Spark)."""
    cls = type(obj)
    return cls.__name__ == "Column" and cls.__module__.startswith("pyspark")


class KStream:
    """A record stream; every method adds a node to the builder's graph and returns
    the stream (or table) downstream of it. Nothing runs until the topology starts.

    ``key_serde``/``value_serde`` are the serdes known for this stream (``None``:
    the application's defaults are used where bytes are needed).
    """

    def __init__(self, graph: GraphBuilder, node: str, key_serde: Optional[Serde],
                 value_serde: Optional[Serde], repartition_required: bool = False):
        self._graph = graph
        self._node = node
        self.key_serde = key_serde
        self.value_serde = value_serde
        self._repartition_required = repartition_required
        #: the repartition that joins of this stream share (generated name), made on first use
        self._join_repartitioned: Optional["KStream"] = None

    @property
    def node_name(self) -> str:
        return self._node

    def _then(self, prefix: str, kind: NodeKind, *, key_changed: bool = False, value_changed: bool = True,
              name: Optional[str] = None, **params: Any) -> "KStream":
        node = self._graph.add(prefix, kind, [self._node], name=name, **params)
        return KStream(self._graph, node,
                       None if key_changed else self.key_serde,
                       None if value_changed else self.value_serde,
                       self._repartition_required or key_changed)

    def _column(self, prefix: str, op: ColumnOp, expr: Any, name: Optional[str], *,
                key_changed: bool = False, value_changed: bool = True, negate: bool = False) -> "KStream":
        """A step written as a Spark ``Column`` over ``key``/``value``: runs in the JVM."""
        return self._then(prefix, COLUMN, key_changed=key_changed, value_changed=value_changed,
                          name=name, op=op, column=expr, negate=negate)

    # -- stateless ------------------------------------------------------------------------
    def filter(self, predicate: Callable[[Any, Any], bool], name: Optional[str] = None) -> "KStream":
        """Keep records for which ``predicate(key, value)`` is true (or, given a Spark
        ``Column`` over ``key``/``value``, for which it is true in the JVM)."""
        require_functions("filter", predicate=predicate)
        if is_column(predicate):
            return self._column("KSTREAM-FILTER", ColumnOp.FILTER, predicate, name, value_changed=False)
        return self._then("KSTREAM-FILTER", FILTER, value_changed=False, name=name,
                          predicate=predicate, negate=False)

    def filter_not(self, predicate: Callable[[Any, Any], bool], name: Optional[str] = None) -> "KStream":
        """Drop records for which ``predicate(key, value)`` is true (or a ``Column`` is)."""
        require_functions("filter_not", predicate=predicate)
        if is_column(predicate):
            return self._column("KSTREAM-FILTER", ColumnOp.FILTER, predicate, name, value_changed=False,
                                negate=True)
        return self._then("KSTREAM-FILTER", FILTER, value_changed=False, name=name,
                          predicate=predicate, negate=True)

    def map(self, mapper: Callable[[Any, Any], tuple], name: Optional[str] = None) -> "KStream":
        """Replace each record by ``mapper(key, value) -> (new_key, new_value)``."""
        require_functions("map", mapper=mapper)
        return self._then("KSTREAM-MAP", MAP, key_changed=True, name=name, mapper=mapper)

    def map_values(self, mapper: Callable[[Any], Any], name: Optional[str] = None) -> "KStream":
        """Replace each value by ``mapper(value)`` (or a ``Column``); the key is kept."""
        require_functions("map_values", mapper=mapper)
        if is_column(mapper):
            return self._column("KSTREAM-MAPVALUES", ColumnOp.MAP_VALUES, mapper, name)
        return self._then("KSTREAM-MAPVALUES", MAP_VALUES, name=name, mapper=mapper)

    def flat_map(self, mapper: Callable[[Any, Any], Iterable[tuple]], name: Optional[str] = None) -> "KStream":
        """Replace each record by zero or more ``(key, value)`` pairs."""
        require_functions("flat_map", mapper=mapper)
        return self._then("KSTREAM-FLATMAP", FLAT_MAP, key_changed=True, name=name, mapper=mapper)

    def flat_map_values(self, mapper: Callable[[Any], Iterable], name: Optional[str] = None) -> "KStream":
        """Replace each value by zero or more values (or the elements of an array
        ``Column``, e.g. ``F.split(F.col("value"), " ")``); the key is kept."""
        require_functions("flat_map_values", mapper=mapper)
        if is_column(mapper):
            return self._column("KSTREAM-FLATMAPVALUES", ColumnOp.FLAT_MAP_VALUES, mapper, name)
        return self._then("KSTREAM-FLATMAPVALUES", FLAT_MAP_VALUES, name=name, mapper=mapper)

    def select_key(self, mapper: Callable[[Any, Any], Any], name: Optional[str] = None) -> "KStream":
        """Set the key to ``mapper(key, value)`` (or a ``Column``)."""
        require_functions("select_key", mapper=mapper)
        if is_column(mapper):
            return self._column("KSTREAM-KEY-SELECT", ColumnOp.SELECT_KEY, mapper, name, key_changed=True,
                                value_changed=False)
        return self._then("KSTREAM-KEY-SELECT", SELECT_KEY, key_changed=True, value_changed=False,
                          name=name, mapper=mapper)

    def peek(self, action: Callable[[Any, Any], None], name: Optional[str] = None) -> "KStream":
        """Call ``action(key, value)`` for each record and pass it on unchanged."""
        require_functions("peek", action=action)
        return self._then("KSTREAM-PEEK", PEEK, value_changed=False, name=name, action=action)

    def foreach(self, action: Callable[[Any, Any], None], name: Optional[str] = None) -> None:
        """Call ``action(key, value)`` for each record (terminal)."""
        require_functions("foreach", action=action)
        self._graph.add("KSTREAM-FOREACH", FOREACH, [self._node], name=name, action=action)

    def merge(self, other: "KStream", name: Optional[str] = None) -> "KStream":
        """Interleave this stream with ``other``."""
        if other._graph is not self._graph:
            raise TopologyError("merge(): both streams must come from the same StreamsBuilder")
        node = self._graph.add("KSTREAM-MERGE", MERGE, [self._node, other._node], name=name)
        same = self.key_serde == other.key_serde and self.value_serde == other.value_serde
        return KStream(self._graph, node, self.key_serde if same else None,
                       self.value_serde if same else None,
                       self._repartition_required or other._repartition_required)

    def split(self, name: Optional[str] = None) -> "BranchedKStream":
        """Route each record to the first branch whose predicate matches."""
        return BranchedKStream(self, name or "")

    # -- the Processor API -----------------------------------------------------------------
    def process(self, processor_supplier: Any, *store_names: str, named: Optional[str] = None) -> "KStream":
        """Run a user processor on every record (Kafka's ``process(ProcessorSupplier,
        storeNames...)``): ``processor_supplier`` is a ``streamlib.Processor`` subclass, a
        function returning one, or a ``ProcessorSupplier``; ``store_names`` are the stores
        (``StreamsBuilder.add_state_store``) it may use. The processor may change keys,
        so a step that needs co-partitioned keys repartitions after it.

        Examples
        --------
        >>> from streamlib import Processor, StreamsBuilder
        >>> class Length(Processor):
        ...     def process(self, record):
        ...         self.context.forward(record.with_value(len(record.value)))
        >>> builder = StreamsBuilder()
        >>> builder.stream("words").process(Length, named="length").to("lengths")
        """
        return self._process(PROCESS, "KSTREAM-PROCESSOR", processor_supplier, store_names, named)

    def process_values(self, processor_supplier: Any, *store_names: str,
                       named: Optional[str] = None) -> "KStream":
        """Like :meth:`process`, for a processor that may not change keys (Kafka's
        ``processValues``): it gets ``FixedKeyRecord`` s and may forward only records made
        from them, so no repartition follows it."""
        return self._process(PROCESS_VALUES, "KSTREAM-PROCESSVALUES", processor_supplier, store_names, named)

    def _process(self, kind: NodeKind, prefix: str, supplier: Any, store_names: tuple,
                 named: Optional[str]) -> "KStream":
        if supplier is None:
            raise TypeError(f"{kind.name}(): processor_supplier can't be null")
        if any(not isinstance(name, str) for name in store_names):
            raise TypeError(f"{kind.name}(): store names must be strings, got {list(store_names)}")
        from .builder import connect_supplier_stores
        stores = tuple(dict.fromkeys(store_names + connect_supplier_stores(self._graph, supplier)))
        fixed_key = kind is PROCESS_VALUES
        node = self._graph.add(prefix, kind, [self._node], name=named, stores=stores, numbered=False,
                               supplier=supplier)
        return KStream(self._graph, node, self.key_serde if fixed_key else None, None,
                       self._repartition_required or not fixed_key)

    # -- sinks and repartitioning -----------------------------------------------------------
    def to(self, topic: str, produced: Optional[Produced] = None) -> None:
        """Write every record to ``topic``."""
        produced = produced or Produced()
        self._graph.add("KSTREAM-SINK", SINK, [self._node], name=produced.name, topic=topic,
                        key_serde=produced.key_serde or self.key_serde,
                        value_serde=produced.value_serde or self.value_serde,
                        partitioner=produced.partitioner)

    def repartition(self, repartitioned: Optional[Repartitioned] = None) -> "KStream":
        """Redistribute records by key (optionally into ``num_partitions`` partitions)."""
        repartitioned = repartitioned or Repartitioned()
        return self._repartition(repartitioned.name, repartitioned.key_serde or self.key_serde,
                                 repartitioned.value_serde or self.value_serde,
                                 repartitioned.num_partitions)

    def _repartition(self, name: Optional[str], key_serde: Optional[Serde],
                     value_serde: Optional[Serde], num_partitions: Optional[int] = None) -> "KStream":
        base = name or self._graph.next_name("KSTREAM-REPARTITION")
        source = self._graph.add_repartition(self._node, base, key_serde, value_serde, num_partitions)
        return KStream(self._graph, source, key_serde, value_serde)

    def to_table(self, materialized: Optional[Materialized] = None, name: Optional[str] = None):
        """The stream read as a changelog: a table of the latest value per key."""
        from .ktable import KTable, materialize
        # Materialized's serdes also write the repartition topic (Kafka's toTable).
        key_serde = (materialized and materialized.key_serde) or self.key_serde
        value_serde = (materialized and materialized.value_serde) or self.value_serde
        stream = self._repartition(None, key_serde, value_serde) if self._repartition_required else self
        store = materialize(self._graph, materialized, "KSTREAM-TOTABLE", key_serde, value_serde)
        node = self._graph.add("KSTREAM-TOTABLE", TABLE_SOURCE, [stream._node], name=name,
                               stores=(store,), store=store)
        return KTable(self._graph, node, key_serde, value_serde, store,
                      queryable=bool(materialized and materialized.store_name))

    # -- joins -------------------------------------------------------------------------
    def join(self, other: Any, joiner: Callable[[Any, Any], Any], joined: Optional[Joined] = None,
             stream_joined: Optional[Joined] = None) -> "KStream":
        """Join each record with ``other``'s row for its key (a ``KTable``): Kafka Streams'
        classic stream–table join. Only stream records trigger; each meets the table as
        it is when the record is processed; records without a row emit nothing. The
        result keeps the record's key and timestamp. A stream whose key changed upstream
        is repartitioned first, so it is co-partitioned with the table.

        Examples
        --------
        >>> from streamlib import StreamsBuilder
        >>> builder = StreamsBuilder()
        >>> customers = builder.table("customers")
        >>> builder.stream("orders").join(customers, lambda o, c: f"{o} for {c}").to("enriched")

        ``other`` may also be a ``KStream`` (``join(stream, joiner, JoinWindows...)``, a
        windowed stream–stream join) or a ``GlobalKTable`` (``join(global_table,
        key_selector, joiner)``). ``stream_joined`` gives a stream–stream join's serdes
        (Kafka's ``StreamJoined``: key, this value, other value).
        """
        require_functions("join", joiner=joiner)
        if not _is_table(other):
            return _other_join(self, other, joiner, joined, "join", stream_joined)
        return self._table_join(other, joiner, joined, left=False)

    def left_join(self, other: Any, joiner: Callable[[Any, Any], Any],
                  joined: Optional[Joined] = None, stream_joined: Optional[Joined] = None) -> "KStream":
        """Like :meth:`join`, but a record without a row (or with a ``None`` key) yields
        ``joiner(value, None)``. Also for streams and global tables, as :meth:`join`."""
        require_functions("left_join", joiner=joiner)
        if not _is_table(other):
            return _other_join(self, other, joiner, joined, "left_join", stream_joined)
        return self._table_join(other, joiner, joined, left=True)

    def outer_join(self, other: "KStream", joiner: Callable[[Any, Any], Any], windows: Any,
                   stream_joined: Optional[Joined] = None) -> "KStream":
        """Windowed outer join with another stream: ``joiner(v, None)`` /
        ``joiner(None, v)`` for records that found no partner once their window closed.

        Examples
        --------
        >>> from streamlib import JoinWindows, StreamsBuilder
        >>> builder = StreamsBuilder()
        >>> clicks, views = builder.stream("clicks"), builder.stream("views")
        >>> clicks.outer_join(views, lambda c, v: f"{c}/{v}",
        ...                   JoinWindows.of_time_difference(5_000)).to("out")
        """
        require_functions("outer_join", joiner=joiner)
        return _other_join(self, other, joiner, windows, "outer_join", stream_joined)

    def _table_join(self, table: Any, joiner: Callable[[Any, Any], Any], joined: Optional[Joined],
                    left: bool) -> "KStream":
        from .ktable import KTable
        what = "left_join" if left else "join"
        if not isinstance(table, KTable) or table._graph is not self._graph:
            raise TopologyError(f"{what}(): the other side must be a KTable of the same StreamsBuilder")
        if table._windowed is not None:
            raise TopologyError(f"{what}(): {table.node_name} is a windowed table; a stream joins "
                                "only a table keyed like its records")
        joined = joined or Joined()
        # grace > 0 keeps its own versioned copy of the table: no lookup store needed
        store = table._lookup_store() if joined.grace_ms == 0 else None
        stream = self
        if self._repartition_required:
            stream = self._join_repartition(joined)
        if store is None:
            from .versioned_join import versioned_join
            node = versioned_join(self._graph, stream, table, joiner, joined, left)
            return KStream(self._graph, node, stream.key_serde, None)
        node = self._graph.add("KSTREAM-LEFTJOIN" if left else "KSTREAM-JOIN", STREAM_TABLE_JOIN,
                               [stream._node], name=joined.name, stores=(store,), store=store,
                               joiner=joiner, left=left)
        return KStream(self._graph, node, stream.key_serde, None)

    def _join_repartition(self, joined: Joined) -> "KStream":
        """The stream repartitioned by its key for a join; one repartition, named after
        this stream's node, is shared by all joins of this stream, a named join gets its
        own (as Kafka)."""
        key_serde = joined.key_serde or self.key_serde
        value_serde = joined.value_serde or self.value_serde
        if joined.name is not None:
            return self._repartition(joined.name, key_serde, value_serde)
        if self._join_repartitioned is None:
            self._join_repartitioned = self._repartition(self._node, key_serde, value_serde)
        return self._join_repartitioned

    # -- grouping ------------------------------------------------------------------------
    def group_by_key(self, grouped: Optional[Grouped] = None):
        """Group by the current key (repartitions first if an upstream step changed keys)."""
        from .grouped import GroupingRepartition, KGroupedStream
        grouped = grouped or Grouped()
        key_serde = grouped.key_serde or self.key_serde
        value_serde = grouped.value_serde or self.value_serde
        repartition = GroupingRepartition(lambda base: self._repartition(base, key_serde, value_serde)._node,
                                          grouped.name) if self._repartition_required else None
        return KGroupedStream(self._graph, self._node, key_serde, value_serde, repartition)

    def group_by(self, selector: Callable[[Any, Any], Any], grouped: Optional[Grouped] = None):
        """Group by ``selector(key, value)`` (always repartitions, like Kafka Streams)."""
        require_functions("group_by", selector=selector)
        return self.select_key(selector).group_by_key(grouped)

    def __repr__(self) -> str:
        return f"KStream({self._node})"


def _is_table(other: Any) -> bool:
    from .ktable import KTable
    return isinstance(other, KTable)


def _other_join(stream: KStream, other: Any, second: Any, third: Any, how: str,
                joined: Optional[Joined] = None) -> KStream:
    """A join of a stream with a stream (``second`` the joiner, ``third`` the windows) or
    with a global table (``second`` the key selector, ``third`` the joiner)."""
    from .stream_joins import stream_stream_join
    if isinstance(other, KStream):
        return stream_stream_join(stream, other, second, third, how, joined)
    from .global_table import GlobalKTable, global_table_join
    if isinstance(other, GlobalKTable) and how != "outer_join":
        return global_table_join(stream, other, second, third, how == "left_join")
    raise TopologyError(f"{how}(): cannot join a stream with {other!r}; the other side is a "
                        "KStream (with JoinWindows), a KTable or a GlobalKTable (not for outer_join)")


class BranchedKStream:
    """Result of :meth:`KStream.split`: add branches, then ``default_branch()`` or ``no_default_branch()``."""

    def __init__(self, stream: KStream, prefix: str):
        self._stream = stream
        self._prefix = prefix
        self._predicates: list[Callable[[Any, Any], bool]] = []
        self._names: list[str] = []
        self._node: Optional[str] = None

    def branch(self, predicate: Callable[[Any, Any], bool], name: Optional[str] = None) -> "BranchedKStream":
        """Records matching ``predicate(key, value)`` (and no earlier branch) go to this branch."""
        require_functions("branch", predicate=predicate)
        self._predicates.append(predicate)
        self._names.append(self._prefix + (name or str(len(self._names) + 1)))
        return self

    def default_branch(self, name: Optional[str] = None) -> dict[str, KStream]:
        """Records matching no branch go here; returns every branch by name."""
        self._names.append(self._prefix + (name or "0"))
        return self._finish(with_default=True)

    def no_default_branch(self) -> dict[str, KStream]:
        """Records matching no branch are dropped; returns every branch by name."""
        return self._finish(with_default=False)

    def _finish(self, with_default: bool) -> dict[str, KStream]:
        if len(set(self._names)) != len(self._names):
            raise TopologyError(f"split(): branch names must be unique, got {self._names}")
        graph = self._stream._graph
        split = graph.add("KSTREAM-BRANCH", BRANCH, [self._stream._node],
                          predicates=list(self._predicates), with_default=with_default)
        result = {}
        for index, name in enumerate(self._names):
            child = graph.add("KSTREAM-BRANCHCHILD", BRANCH_CHILD, [split], index=index)
            result[name] = KStream(graph, child, self._stream.key_serde, self._stream.value_serde,
                                   self._stream._repartition_required)
        return result

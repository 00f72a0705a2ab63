"""``KTable``: a changelog stream read as the latest value per key."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Optional

from ..node_kinds import (SUPPRESS, TABLE_FILTER, TABLE_JOIN, TABLE_JOIN_MERGE, TABLE_MAP_VALUES, TABLE_SELECT,
                          TO_STREAM, NodeKind)
from ..node_params import TableJoinMode
from ..serdes import Serde
from ..state.kinds import StoreKind
from ..topology import StoreDef, TopologyError
from .graph import GraphBuilder, require_functions
from .options import Grouped, Materialized, Suppressed

#: the node name prefixes of a table–table join's sides: KTABLE-<prefix>THIS/OTHER (Kafka's)
_JOIN_PREFIXES = {TableJoinMode.INNER: "JOIN", TableJoinMode.LEFT: "LEFT", TableJoinMode.OUTER: "OUTER"}


@dataclass(frozen=True)
class Reversed:
    """``joiner`` with its arguments swapped (Kafka's ``reverseJoiner``), picklable:
    the other side of a table–table join calls it as ``(own value, this table's value)``."""

    joiner: Callable[[Any, Any], Any]

    def __call__(self, other_value: Any, this_value: Any) -> Any:
        return self.joiner(this_value, other_value)


def materialize(graph: GraphBuilder, materialized: Optional[Materialized], prefix: str,
                key_serde: Optional[Serde], value_serde: Optional[Serde], owner: Optional[str] = None,
                generated: Optional[str] = None) -> str:
    """Register the store behind a table and return its name (when unnamed, ``generated``
    or one made for ``prefix``; ``owner``: the existing node it is for, see
    ``GraphBuilder.internal_store_name``)."""
    if materialized is not None and materialized.history_retention_ms is not None and prefix != "KTABLE-SOURCE":
        raise TopologyError(f"{prefix}: Materialized.as_versioned({materialized.store_name!r}) is for a "
                            "table read from a topic (builder.table); use Materialized.as_ here")
    named = bool(materialized and materialized.store_name)
    name = materialized.store_name if named else generated or graph.internal_store_name(prefix, owner)
    logging = materialized.logging if materialized else True
    caching = materialized.caching if materialized else True
    graph.add_store(StoreDef(name, StoreKind.KV, key_serde, value_serde, logging=logging, queryable=named,
                             caching=caching, changelog_config=materialized.logging_config if materialized else ()),
                    user_named=named, step=prefix)
    return name


class KTable:
    """A table: every record is an update of its key; ``None`` deletes the key.

    Updates flow downstream as changes (new value, old value), so that a filter can
    turn an update into a delete and a re-grouping can subtract the old value.
    """

    def __init__(self, graph: GraphBuilder, node: str, key_serde: Optional[Serde],
                 value_serde: Optional[Serde], store: Optional[str], queryable: bool = False,
                 windowed: Any = None):
        self._graph = graph
        self._node = node
        self.key_serde = key_serde
        self.value_serde = value_serde
        self._store = store
        self._queryable = queryable
        #: for a windowed table (keys are ``Windowed``): how its keys look on the wire
        self._windowed = windowed
        #: a versioned table's history retention (``Materialized.as_versioned``), or None
        self._history_ms: Optional[int] = None

    @property
    def query_name(self) -> Optional[str]:
        """The name to query this table's store by, or ``None`` if it is not queryable."""
        return self._store if self._queryable else None

    @property
    def node_name(self) -> str:
        return self._node

    def _derive(self, prefix: str, kind: NodeKind, materialized: Optional[Materialized],
                value_serde: Optional[Serde], name: Optional[str] = None, **params: Any) -> "KTable":
        store = None
        if materialized is not None:
            value_serde = materialized.value_serde or value_serde
            store = materialize(self._graph, materialized, prefix, self.key_serde, value_serde)
        node = self._graph.add(prefix, kind, [self._node], name=name,
                               stores=(store,) if store else (), store=store, **params)
        return KTable(self._graph, node, self.key_serde, value_serde, store,
                      queryable=bool(materialized and materialized.store_name), windowed=self._windowed)

    def filter(self, predicate: Callable[[Any, Any], bool], materialized: Optional[Materialized] = None,
               name: Optional[str] = None) -> "KTable":
        """Keep rows for which ``predicate(key, value)`` holds; an update that no longer
        matches becomes a delete downstream."""
        require_functions("filter", predicate=predicate)
        return self._derive("KTABLE-FILTER", TABLE_FILTER, materialized, self.value_serde, name,
                            predicate=predicate, negate=False)

    def filter_not(self, predicate: Callable[[Any, Any], bool], materialized: Optional[Materialized] = None,
                   name: Optional[str] = None) -> "KTable":
        """Drop rows for which ``predicate(key, value)`` holds."""
        require_functions("filter_not", predicate=predicate)
        return self._derive("KTABLE-FILTER", TABLE_FILTER, materialized, self.value_serde, name,
                            predicate=predicate, negate=True)

    def map_values(self, mapper: Callable[[Any], Any], materialized: Optional[Materialized] = None,
                   name: Optional[str] = None) -> "KTable":
        """Replace each value by ``mapper(value)``."""
        require_functions("map_values", mapper=mapper)
        return self._derive("KTABLE-MAPVALUES", TABLE_MAP_VALUES, materialized, None, name,
                            mapper=mapper)

    def to_stream(self, mapper: Optional[Callable[[Any, Any], Any]] = None,
                  name: Optional[str] = None):
        """The table's updates as a stream (deletes as ``None`` values)."""
        from .kstream import KStream
        node = self._graph.add("KTABLE-TOSTREAM", TO_STREAM, [self._node], name=name, mapper=mapper)
        return KStream(self._graph, node, None if mapper else self.key_serde, self.value_serde,
                       repartition_required=mapper is not None)

    def suppress(self, suppressed: Suppressed, name: Optional[str] = None) -> "KTable":
        """Hold updates back: with ``Suppressed.until_window_closes()``, forward one final
        result per window once stream time passes the window's end plus its grace
        (Kafka Streams' final-results suppression); with ``Suppressed.until_time_limit(d)``,
        forward each key's latest update once stream time passes its first held update's
        time + ``d``. The buffer is change-logged; a bounded one emits early or fails the
        task when full, as its ``BufferConfig`` says. Forwarded updates keep the headers of
        the update they are (Kafka's buffer keeps the record's context).

        Examples
        --------
        >>> from streamlib import StreamsBuilder, Suppressed, TimeWindows
        >>> builder = StreamsBuilder()
        >>> (builder.stream("clicks").group_by_key().windowed_by(TimeWindows.of(60_000)).count()
        ...  .suppress(Suppressed.until_window_closes()).to_stream().to("final-counts"))
        """
        if not isinstance(suppressed, Suppressed) or suppressed.kind not in ("until_window_closes",
                                                                              "until_time_limit"):
            raise TopologyError(f"suppress(): unsupported {suppressed!r}")
        final = suppressed.kind == "until_window_closes"
        if final:
            windows = self._upstream_windows()
            if self._windowed is None or windows is None:
                raise TopologyError(f"{self._node}: suppress(Suppressed.until_window_closes()) needs a windowed "
                                    "table (group_by_key().windowed_by(...).count() or similar)")
            # Kafka's GraphGraceSearchUtil: sessions close gap + grace after their end
            wait = windows.grace_ms + getattr(windows, "gap_ms", 0)
        else:
            wait = suppressed.time_limit_ms
        node_name = name or suppressed.name or self._graph.next_name("KTABLE-SUPPRESS")
        store = f"{node_name}-STATE-STORE"
        self._graph.add_store(StoreDef(store, StoreKind.BUFFER, logging=True, queryable=False),
                              user_named=False, step="KTABLE-SUPPRESS")
        config = suppressed.buffer_config
        node = self._graph.add("KTABLE-SUPPRESS", SUPPRESS, [self._node], name=node_name,
                               stores=(store,), store=store, grace_ms=wait, final=final,
                               max_records=config.record_limit, max_bytes=config.byte_limit,
                               emit_early=config.when_full == "emit_early",
                               windowed_keys=self._windowed, key_serde=self.key_serde,
                               value_serde=self.value_serde)
        return KTable(self._graph, node, self.key_serde, self.value_serde, None, windowed=self._windowed)

    def _upstream_windows(self) -> Any:
        """The windows of the aggregation this table derives from, if any."""
        name = self._node
        while name is not None:
            node = self._graph.nodes[name]
            windows = getattr(node.params, "windows", None)
            if windows is not None:
                return windows
            name = node.parents[0] if len(node.parents) == 1 else None
        return None

    def group_by(self, selector: Callable[[Any, Any], tuple], grouped: Optional[Grouped] = None):
        """Re-group rows by ``selector(key, value) -> (new_key, new_value)`` for a
        :class:`KGroupedTable` aggregation (Kafka Streams' ``KTable#groupBy``)."""
        require_functions("group_by", selector=selector)
        from .grouped import GroupingRepartition, KGroupedTable
        grouped = grouped or Grouped()
        select = self._graph.add("KTABLE-SELECT", TABLE_SELECT, [self._node], selector=selector)
        repartition = GroupingRepartition(lambda base: self._graph.add_repartition(
            select, base, grouped.key_serde, grouped.value_serde, changes=True), grouped.name)
        return KGroupedTable(self._graph, select, grouped.key_serde, grouped.value_serde, repartition)

    # -- joins -------------------------------------------------------------------------
    def join(self, other: "KTable", joiner: Callable[[Any, Any], Any],
             materialized: Optional[Materialized] = None, name: Optional[str] = None,
             foreign_key_extractor: Optional[Callable[[Any], Any]] = None) -> "KTable":
        """Inner join with ``other`` on the key: a row for every key both tables have,
        ``joiner(this_value, other_value)``, updated whenever either side changes; a key
        that loses its match is deleted (Kafka Streams' ``KTable#join``). The result's
        timestamp is the larger of both rows'. Also joins two windowed tables on their
        ``Windowed`` keys.

        Examples
        --------
        >>> from streamlib import StreamsBuilder, Materialized
        >>> builder = StreamsBuilder()
        >>> users, regions = builder.table("users"), builder.table("regions")
        >>> users.join(regions, lambda u, r: f"{u}@{r}",
        ...            materialized=Materialized.as_("user-regions")).to_stream().to("out")

        With ``foreign_key_extractor``, a foreign-key join (Kafka's KIP-213): each row
        joins ``other``'s row whose key is ``foreign_key_extractor(value)``; the result
        is keyed like this table and follows changes of the foreign key and deletes on
        either side.

        >>> orders, customers = builder.table("orders"), builder.table("customers")
        >>> orders.join(customers, lambda o, c: f"{o}/{c}",
        ...             foreign_key_extractor=lambda o: o.split(":")[0]).to_stream().to("out2")
        """
        require_functions("join", joiner=joiner)
        if foreign_key_extractor is not None:
            from .fk_join import foreign_key_join
            return foreign_key_join(self, other, joiner, foreign_key_extractor, False, materialized, name)
        return self._join(other, joiner, TableJoinMode.INNER, materialized, name)

    def left_join(self, other: "KTable", joiner: Callable[[Any, Any], Any],
                  materialized: Optional[Materialized] = None, name: Optional[str] = None,
                  foreign_key_extractor: Optional[Callable[[Any], Any]] = None) -> "KTable":
        """Left join: every row of this table, ``joiner(value, other_value_or_None)``
        (with ``foreign_key_extractor``: a foreign-key left join, see :meth:`join`)."""
        require_functions("left_join", joiner=joiner)
        if foreign_key_extractor is not None:
            from .fk_join import foreign_key_join
            return foreign_key_join(self, other, joiner, foreign_key_extractor, True, materialized, name)
        return self._join(other, joiner, TableJoinMode.LEFT, materialized, name)

    def outer_join(self, other: "KTable", joiner: Callable[[Any, Any], Any],
                   materialized: Optional[Materialized] = None, name: Optional[str] = None) -> "KTable":
        """Outer join: a row for every key of either table; the missing side is ``None``."""
        require_functions("outer_join", joiner=joiner)
        return self._join(other, joiner, TableJoinMode.OUTER, materialized, name)

    def _join(self, other: "KTable", joiner: Callable[[Any, Any], Any], how: TableJoinMode,
              materialized: Optional[Materialized], name: Optional[str]) -> "KTable":
        if not isinstance(other, KTable) or other._graph is not self._graph:
            raise TopologyError(f"{how.value} join: the other side must be a KTable of the same StreamsBuilder")
        if (self._windowed is None) != (other._windowed is None):
            raise TopologyError(f"{self._node} and {other._node}: a windowed table joins only "
                                "another windowed table")
        if materialized is not None and self._windowed is not None:
            raise TopologyError(f"{self._node}: the join of windowed tables cannot be materialized "
                                "into a key-value store; query the windowed inputs' stores")
        this_store, other_store = self._lookup_store(), other._lookup_store()
        prefix = _JOIN_PREFIXES[how]
        this_node = self._graph.add(f"KTABLE-{prefix}THIS", TABLE_JOIN, [self._node], stores=(other_store,),
                                    store=other_store, joiner=joiner, mode=how,
                                    parent_sends_old_values=how.keeps_unmatched)
        other_mode = how.other_side
        other_node = self._graph.add(f"KTABLE-{prefix}OTHER", TABLE_JOIN, [other._node], stores=(this_store,),
                                     store=this_store, joiner=Reversed(joiner), mode=other_mode,
                                     parent_sends_old_values=other_mode.keeps_unmatched)
        value_serde = materialized.value_serde if materialized else None
        store = None
        if materialized is not None:
            key_serde = materialized.key_serde or self.key_serde
            store = materialize(self._graph, materialized, "KTABLE-MERGE", key_serde, value_serde)
        node = self._graph.add("KTABLE-MERGE", TABLE_JOIN_MERGE, [this_node, other_node], name=name,
                               stores=(store,) if store else (), store=store)
        return KTable(self._graph, node, self.key_serde, value_serde, store,
                      queryable=bool(materialized and materialized.store_name), windowed=self._windowed)

    def _lookup_store(self) -> str:
        """The store a join looks this table's rows up in. A table without one (a filter
        or map_values without ``materialized``, an unmaterialized join) gets one: its
        node then keeps its rows in an internal store (Kafka's value getters compute
        them on the fly from the parent's store instead; the results are the same, as
        the tables above it forward every update at once: ``Topology.forwards_at_once``)."""
        if self._store is not None:
            return self._store
        node = self._graph.nodes[self._node]
        if self._windowed is not None or not node.spec.materializable:
            raise TopologyError(f"{self._node}: this table has no store to join against; "
                                "join the table it derives from, or materialize it")
        store = materialize(self._graph, None, node.name.rsplit("-", 1)[0], self.key_serde,
                            self.value_serde, owner=node.name)
        node.stores = (store,)
        node.params = replace(node.params, store=store)
        self._store = store
        return store

    def __repr__(self) -> str:
        return f"KTable({self._node}, store={self._store})"

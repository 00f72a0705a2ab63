"""``StreamsBuilder``: the entry point of the DSL."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional, Sequence, Union

from ..node_kinds import PROCESS, PROCESS_VALUES, SOURCE, TABLE_SOURCE
from ..topology import Topology, TopologyError
from .global_table import GlobalKTable, add_global_table
from .graph import GraphBuilder
from .kstream import KStream
from .ktable import KTable, materialize
from .options import Consumed, Materialized


class StreamsBuilder:
    """Builds a topology from streams and tables (Kafka Streams' ``StreamsBuilder``).

    Examples
    --------
    >>> from streamlib import StreamsBuilder, Serdes, Consumed
    >>> builder = StreamsBuilder()
    >>> lines = builder.stream("lines", consumed=Consumed.with_(Serdes.string(), Serdes.string()))
    >>> lines.map_values(str.upper).to("upper")
    >>> topology = builder.build()
    >>> topology.source_topics(), topology.sink_topics()
    (['lines'], ['upper'])
    """

    def __init__(self) -> None:
        self._graph = GraphBuilder()
        self._topics_read: set[str] = set()
        #: (topics, consumed, source node) of each stream source
        self._stream_sources: list[tuple[set, Consumed, str]] = []

    def stream(self, topics: Union[str, Sequence[str]], consumed: Optional[Consumed] = None) -> KStream:
        """A record stream over one or several topics."""
        topic_list = [topics] if isinstance(topics, str) else list(topics)
        if not topic_list:
            raise TopologyError("stream() needs at least one topic")
        consumed = consumed or Consumed()
        # Kafka Streams merges the sources of two streams over the same topics (compared,
        # not hashed: a user's serde or extractor need not be hashable).
        wanted = set(topic_list)
        node = next((node for topics, how, node in self._stream_sources
                     if topics == wanted and how == consumed), None)
        if node is None:
            node = self._source(topic_list, consumed)
            self._stream_sources.append((wanted, consumed, node))
        return KStream(self._graph, node, consumed.key_serde, consumed.value_serde)

    def table(self, topic: str, consumed: Optional[Consumed] = None,
              materialized: Optional[Materialized] = None) -> KTable:
        """A changelog stream of ``topic`` read as a table: the latest value per key."""
        consumed = consumed or Consumed()
        # The topic is read with Materialized's serdes where Consumed has none (Kafka's
        # table(topic, materialized)); Consumed's win (table(topic, consumed, materialized)).
        key_serde = consumed.key_serde or (materialized and materialized.key_serde) or None
        value_serde = consumed.value_serde or (materialized and materialized.value_serde) or None
        generated = None if materialized and materialized.store_name else self._graph.topic_store_name(topic)
        source = self._source([topic], replace(consumed, key_serde=key_serde, value_serde=value_serde))
        store = materialize(self._graph, materialized, "KTABLE-SOURCE", key_serde, value_serde,
                            generated=generated)
        node = self._graph.add("KTABLE-SOURCE", TABLE_SOURCE, [source], stores=(store,), store=store)
        table = KTable(self._graph, node, key_serde, value_serde, store, queryable=bool(
            materialized and materialized.store_name))
        table._history_ms = materialized and materialized.history_retention_ms
        return table

    def global_table(self, topic: str, consumed: Optional[Consumed] = None,
                     materialized: Optional[Materialized] = None) -> GlobalKTable:
        """A table of ``topic`` replicated in full to every task (Kafka Streams'
        ``globalTable``): streams join it on any key, without repartitioning.

        Examples
        --------
        >>> from streamlib import StreamsBuilder
        >>> builder = StreamsBuilder()
        >>> products = builder.global_table("products")
        >>> (builder.stream("orders")
        ...  .join(products, lambda order_id, order: order, lambda order, product: f"{order}:{product}")
        ...  .to("enriched"))
        """
        if topic in self._topics_read:
            raise TopologyError(f"topic {topic!r} is already read by another source of this builder")
        self._topics_read.add(topic)
        return add_global_table(self._graph, topic, consumed, materialized)

    def add_state_store(self, store_builder: Any) -> None:
        """Add a store for user processors (Kafka's ``addStateStore``): a builder from
        :class:`streamlib.Stores`; ``KStream.process(supplier, name)`` connects it.

        Examples
        --------
        >>> from streamlib import Serdes, Stores, StreamsBuilder
        >>> builder = StreamsBuilder()
        >>> builder.add_state_store(Stores.key_value_store_builder(
        ...     Stores.persistent_key_value_store("totals"), Serdes.string(), Serdes.long()))
        """
        add_store_builder(self._graph, store_builder)

    def build(self) -> Topology:
        """Freeze the graph into a :class:`Topology` (checks it, splits sub-topologies)."""
        connect_user_stores(self._graph)
        return self._graph.build()

    def _source(self, topics: list[str], consumed: Consumed) -> str:
        for topic in topics:
            if topic in self._topics_read:
                raise TopologyError(f"topic {topic!r} is already read by another source of this builder")
            self._topics_read.add(topic)
        return self._graph.add("KSTREAM-SOURCE", SOURCE, [], name=consumed.name, topics=topics,
                               key_serde=consumed.key_serde, value_serde=consumed.value_serde,
                               timestamp_extractor=consumed.timestamp_extractor)


def add_store_builder(graph: GraphBuilder, store_builder: Any) -> None:
    """Add the store of a ``Stores`` builder (refusing a name another store has)."""
    build = getattr(store_builder, "build", None)
    if build is None:
        raise TypeError(f"add_state_store() takes a builder from Stores, not {store_builder!r}")
    graph.add_store(build(), user_named=True, step="add_state_store")


def connect_supplier_stores(graph: GraphBuilder, supplier: Any) -> tuple[str, ...]:
    """The names of the stores a processor supplier provides itself (its ``stores()``,
    Kafka's ``ConnectedStoreProvider``), added to the graph unless the same store is
    there already (a supplier used twice)."""
    stores = getattr(supplier, "stores", None)   # a class's would need an instance: not a provider
    names = []
    for store_builder in (stores() or ()) if callable(stores) and not isinstance(supplier, type) else ():
        known = graph.stores.get(store_builder.name)
        if known is None or known != store_builder.build():
            add_store_builder(graph, store_builder)
        names.append(store_builder.name)
    return tuple(names)


def connect_user_stores(graph: GraphBuilder) -> None:
    """Tell each user processor node the kinds and retention of its stores, which may
    have been added after it (``process()`` before ``add_state_store()``)."""
    for node in graph.nodes.values():
        if node.spec in (PROCESS, PROCESS_VALUES):
            known = [graph.stores[name] for name in node.stores if name in graph.stores]
            for d in known:
                if d.global_topic:
                    raise TopologyError(f"{node.name}: {d.name!r} is a global table's store; a processor "
                                        "uses stores of its own task (join the global table instead)")
            node.params = replace(node.params, store_kinds={d.name: d.kind for d in known},
                                  retention={d.name: d.retention_ms for d in known
                                             if d.kind.windowed})

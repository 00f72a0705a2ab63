"""``StreamsBuilder``: the entry point of the DSL."""
from __future__ import annotations

from dataclasses import replace
from typing import Optional, Sequence, Union

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
        node = self._graph.add("KTABLE-SOURCE", "table_source", [source], stores=(store,), store=store)
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

    def build(self) -> Topology:
        """Freeze the graph into a :class:`Topology` (checks it, splits sub-topologies)."""
        return self._graph.build()

    def _source(self, topics: list[str], consumed: Consumed) -> str:
        for topic in topics:
            if topic in self._topics_read:
                raise TopologyError(f"topic {topic!r} is already read by another source of this builder")
            self._topics_read.add(topic)
        return self._graph.add("KSTREAM-SOURCE", "source", [], name=consumed.name, topics=topics,
                               key_serde=consumed.key_serde, value_serde=consumed.value_serde,
                               timestamp_extractor=consumed.timestamp_extractor)

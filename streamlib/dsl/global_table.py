"""``GlobalKTable``: a table every task sees in full, and the stream joins against it."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from ..node_kinds import GLOBAL_JOIN, GLOBAL_SOURCE, GLOBAL_TABLE_SOURCE
from ..serdes import Serde
from ..state.kinds import StoreKind
from ..topology import StoreDef, TopologyError
from .graph import GraphBuilder
from .options import Consumed, Materialized

if TYPE_CHECKING:
    from .kstream import KStream


class GlobalKTable:
    """A table replicated in full to every task (Kafka Streams' ``GlobalKTable``): a
    stream joins it on any key it derives from its records, with no repartition.

    Every task keeps a replica of the global topic and catches it up before each batch
    (under the ``TopologyTestDriver``, piping into the topic updates the store at once).
    Only streams join a global table; it has no operators of its own.
    """

    def __init__(self, graph: GraphBuilder, topic: str, store: str, key_serde: Optional[Serde],
                 value_serde: Optional[Serde], queryable: bool):
        self._graph = graph
        self.topic = topic
        self._store = store
        self.key_serde = key_serde
        self.value_serde = value_serde
        self._queryable = queryable

    @property
    def query_name(self) -> Optional[str]:
        """The store name to query (``driver.get_key_value_store``), or ``None``."""
        return self._store if self._queryable else None

    def __repr__(self) -> str:
        return f"GlobalKTable({self.topic!r}, store={self._store})"


def add_global_table(graph: GraphBuilder, topic: str, consumed: Optional[Consumed],
                     materialized: Optional[Materialized]) -> GlobalKTable:
    """Register ``topic`` as a global table: its store and the two nodes ``describe()``
    shows as a global sub-topology (named as Kafka's ``globalTable``)."""
    consumed = consumed or Consumed()
    if materialized is not None and materialized.history_retention_ms is not None:
        raise TopologyError(f"global_table({topic!r}): a global table is not versioned; use "
                            "Materialized.as_ (versioned tables: builder.table)")
    named = bool(materialized and materialized.store_name)
    store = materialized.store_name if named else graph.topic_store_name(topic)
    key_serde = (materialized and materialized.key_serde) or consumed.key_serde
    value_serde = (materialized and materialized.value_serde) or consumed.value_serde
    graph.add_store(StoreDef(store, StoreKind.KV, key_serde, value_serde, logging=False, queryable=named,
                             caching=False, global_topic=topic), user_named=named, step="GLOBAL-TABLE")
    source = graph.add("KSTREAM-SOURCE", GLOBAL_SOURCE, [], name=consumed.name, topics=[topic])
    graph.add("KTABLE-SOURCE", GLOBAL_TABLE_SOURCE, [source], stores=(store,), store=store)
    return GlobalKTable(graph, topic, store, key_serde, value_serde, named)


def global_table_join(stream: "KStream", table: GlobalKTable, key_selector: Callable[[Any, Any], Any],
                      joiner: Callable[[Any, Any], Any], left: bool) -> "KStream":
    """``stream.join(global_table, key_selector, joiner)`` (``left_join`` when ``left``):
    each record looks up ``key_selector(key, value)`` in its task's replica."""
    from .kstream import KStream
    if table._graph is not stream._graph:
        raise TopologyError("a stream joins only a GlobalKTable of the same StreamsBuilder")
    if not callable(key_selector) or not callable(joiner):
        raise TopologyError("a join with a GlobalKTable takes (global_table, key_selector(k, v), "
                            "joiner(v, table_value))")
    node = stream._graph.add("KSTREAM-LEFTJOIN" if left else "KSTREAM-JOIN", GLOBAL_JOIN,
                             [stream.node_name], global_store=table._store,
                             key_selector=key_selector, joiner=joiner, left=left)
    # the record keeps its key: the stream stays partitioned as it was
    return KStream(stream._graph, node, stream.key_serde, None, stream._repartition_required)

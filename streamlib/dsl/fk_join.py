"""The DSL side of foreign-key table–table joins: the nodes, stores and repartitions
``KTable.join(other, joiner, foreign_key_extractor=fn)`` adds (see
:mod:`streamlib.processors.fk_joins` for the design)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from ..node_kinds import (FK_FOREIGN_CHANGE, FK_LEFT_REPLICA, FK_LEFT_SEND, FK_RESPONSE_JOIN, FK_SUBSCRIBE,
                          FK_SUBSCRIPTION_JOIN, REPARTITION, SOURCE, TABLE_SOURCE)
from ..serdes import Serdes
from ..state.kinds import StoreKind
from ..topology import StoreDef, TopologyError
from .options import Materialized

if TYPE_CHECKING:
    from .ktable import KTable


def _repartition(graph: Any, prefix: str, parent: str, key_serde: Any, value_serde: Any) -> str:
    """A repartition topic ``<prefix>-<index>-repartition`` fed by ``parent``; returns the
    name of the source node reading it."""
    base = graph.next_name(prefix)
    topic = f"{base}-repartition"
    graph.add("KSTREAM-SINK", REPARTITION, [parent], name=f"{base}-sink", topic=topic,
              key_serde=key_serde, value_serde=value_serde, num_partitions=None)
    return graph.add("KSTREAM-SOURCE", SOURCE, [], name=f"{base}-source", topics=[topic],
                     internal=True, key_serde=key_serde, value_serde=value_serde)


def foreign_key_join(this: "KTable", other: "KTable", joiner: Callable[[Any, Any], Any],
                     extractor: Callable[[Any], Any], left: bool,
                     materialized: Optional[Materialized], name: Optional[str]) -> "KTable":
    """``this.join(other, joiner, foreign_key_extractor=extractor)`` (``left_join`` when
    ``left``): a row per row of ``this`` whose ``extractor(value)`` is a key of ``other``."""
    from .ktable import KTable, materialize
    what = "left_join" if left else "join"
    if not isinstance(other, KTable) or other._graph is not this._graph:
        raise TopologyError(f"{what}(): the other side of a foreign-key join must be a KTable "
                            "of the same StreamsBuilder")
    if this._windowed is not None or other._windowed is not None:
        raise TopologyError(f"{what}(): a foreign-key join needs tables keyed by plain keys")
    graph = this._graph
    right_store = other._lookup_store()
    serdes = dict(key_serde=this.key_serde, value_serde=this.value_serde, fk_serde=other.key_serde,
                  right_value_serde=other.value_serde, left=left)
    # 1. the left table's side: its values forward, subscriptions by foreign key
    send = graph.add("KTABLE-FK-JOIN-LEFT-SEND", FK_LEFT_SEND, [this.node_name])
    left_values = _repartition(graph, "KTABLE-FK-JOIN-LEFT-VALUES", send, this.key_serde,
                               this.value_serde)
    subscribe = graph.add("KTABLE-FK-JOIN-SUBSCRIPTION-SEND", FK_SUBSCRIBE, [this.node_name],
                          foreign_key_extractor=extractor, parent_sends_old_values=True, **serdes)
    registrations = _repartition(graph, "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION", subscribe,
                                 other.key_serde, Serdes.bytes())
    # 2. the right table's side: subscriptions and answers, keyed by the left key's bytes
    subscriptions = f"{graph.next_name('KTABLE-FK-JOIN-SUBSCRIPTION')}-STATE-STORE"
    graph.add_store(StoreDef(subscriptions, StoreKind.RAW, logging=True, queryable=False, caching=False),
                    user_named=False, step="KTABLE-FK-JOIN")
    receive = graph.add("KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR", FK_SUBSCRIPTION_JOIN,
                        [registrations], stores=(subscriptions, right_store),
                        subscriptions=subscriptions, store=right_store, **serdes)
    foreign = graph.add("KTABLE-FK-JOIN-FOREIGN-PROCESSOR", FK_FOREIGN_CHANGE, [other.node_name],
                        stores=(subscriptions,), subscriptions=subscriptions, **serdes)
    response_source = _repartition(graph, "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE", receive,
                                   Serdes.bytes(), Serdes.bytes())
    response_topic = graph.nodes[response_source].params.topics[0]
    graph.add("KSTREAM-SINK", REPARTITION, [foreign], name=f"{foreign}-sink", topic=response_topic,
              key_serde=Serdes.bytes(), value_serde=Serdes.bytes(), num_partitions=None)
    # 3. keyed by the left key again: the left values' replica and the result table
    replica = materialize(graph, None, "KTABLE-FK-JOIN-LEFT-REPLICA", this.key_serde, this.value_serde)
    graph.add("KTABLE-FK-JOIN-LEFT-REPLICA", FK_LEFT_REPLICA, [left_values], stores=(replica,),
              store=replica)
    response = graph.add("KTABLE-FK-JOIN-RESPONSE-PROCESSOR", FK_RESPONSE_JOIN, [response_source],
                         stores=(replica,), store=replica, joiner=joiner, **serdes)
    value_serde = materialized.value_serde if materialized else None
    key_serde = (materialized and materialized.key_serde) or this.key_serde
    result_store = materialize(graph, materialized, "KTABLE-FK-JOIN-OUTPUT", key_serde, value_serde)
    node = graph.add("KTABLE-FK-JOIN-OUTPUT", TABLE_SOURCE, [response], name=name,
                     stores=(result_store,), store=result_store)
    return KTable(graph, node, this.key_serde, value_serde, result_store,
                  queryable=bool(materialized and materialized.store_name))

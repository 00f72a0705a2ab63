"""Node kinds: one plain spec per kind of step in the logical graph.

A :class:`NodeKind` says what the topology needs to know about a kind of node (its
role: source, sink, repartition, table step...), which kinds of store its nodes use
and the frozen dataclass its nodes' parameters are (:mod:`streamlib.node_params`;
the DSL's ``graph.add(prefix, KIND, parents, **fields)`` makes one). Everything else about a kind is registered next to the code that owns it, keyed
by the spec: its processor in :mod:`streamlib.processors` (``@processes(KIND)`` on the
class) and, where Spark runs it differently from a task, its lowering in
:mod:`streamlib.spark.lowerings`. So a new operator is one spec here (or in its own
module) with its params type, one processor, its stores and its tests; no module
checks kind names.

A graph :class:`~streamlib.topology.Node` keeps its kind's *name* (a plain string, so
topologies pickle small and print readably); ``node.spec`` is the registered spec and
``node.params`` an instance of the spec's ``params`` type (read by attribute).
Creating a spec registers it, so a spec defined in another module works once that
module is imported (under Spark: imported where the topology is unpickled, as for any
user function).

Examples
--------
>>> from streamlib.node_kinds import NodeKind, node_kind
>>> UPPER = NodeKind("example_upper")
>>> node_kind("example_upper") is UPPER
True
>>> node_kind("suppress").time_aware
True
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from .node_params import (ActionParams, AggregateParams, BranchChildParams, BranchParams, ColumnParams,
                          FilterParams, FkForeignChangeParams, FkResponseJoinParams, FkSubscribeParams,
                          FkSubscriptionJoinParams, GlobalJoinParams, GlobalSourceParams, JoinWindowParams,
                          MapperParams, NoParams, ProcessParams, SessionAggregateParams,
                          SinkParams, SourceParams, StoreParams, StreamJoinParams, StreamTableJoinParams,
                          SuppressParams, TableAggregateParams, TableFilterParams, TableJoinParams,
                          TableMapValuesParams, TableSelectParams, ToStreamParams, VersionedJoinParams,
                          WindowAggregateParams)
from .state.kinds import StoreKind

#: Store kinds (``StoreDef.kind``) a step that looks up a table may read: key-value,
#: or window/session for a windowed table.
TABLE_STORES = (StoreKind.KV, StoreKind.WINDOW, StoreKind.SESSION)
#: Store kinds a user processor may be connected to (``Stores``' builders make them)
USER_STORES = TABLE_STORES + (StoreKind.VERSIONED,)

_REGISTRY: dict[str, "NodeKind"] = {}


class UnknownNodeKind(KeyError):
    """No :class:`NodeKind` of that name is registered."""


@dataclass(frozen=True)
class NodeKind:
    """What the topology knows of one kind of graph node: its name and its roles."""

    name: str
    #: reads records from a topic (external, or a repartition when ``internal``)
    source: bool = False
    #: writes records out of its sub-topology (to a topic or a repartition)
    sink: bool = False
    #: writes to a repartition topic: the graph is cut behind it (under Spark: a shuffle)
    repartition: bool = False
    #: a node of a global table: described, but run by no task (each task keeps a
    #: replica of the global store, see :mod:`streamlib.state.global_replica`)
    global_table: bool = False
    #: a KTable step that passes a table's changes on: needs old values only if its
    #: children do (Kafka Streams' ``sendOldValues`` propagation)
    derived_table: bool = False
    #: a child of a table that uses only the new value of a change
    new_value_only: bool = False
    #: a child of a table that needs every update, not the latest per commit: the stores
    #: of the tables above it are never cached (Kafka's versioned stores have no cache)
    every_update: bool = False
    #: a table step that can keep its rows in a store when a join needs to look them up
    materializable: bool = False
    #: acts on stream time (windows, suppress, grace): its task runs at every batch
    time_aware: bool = False
    #: a Spark ``Column`` expression: has no processor, runs only through Spark
    spark_only: bool = False
    #: keeps task state of its own (a user processor's punctuation schedule): its
    #: sub-topology's tasks keep state even without stores
    task_state: bool = False
    #: the store kinds (``StoreDef.kind``) its nodes may use, owned or looked up (names
    #: are accepted too)
    stores: tuple[StoreKind, ...] = ()
    #: whether the table a node of this kind makes is materialized in Kafka Streams'
    #: sense (``KTableImpl.enableSendingOldValues(false)``), which makes a table filter
    #: below it drop deletes of rows that never were: ``"always"`` (aggregations,
    #: table-table joins), ``"named"`` (with a user-named store), ``"named or parent"``,
    #: ``"parent"``; ``""``: never (see ``Topology.materialized_table``)
    materialized: str = ""
    #: the frozen dataclass its nodes' ``params`` are (:mod:`streamlib.node_params`)
    params: type = NoParams

    def __post_init__(self) -> None:
        object.__setattr__(self, "stores", tuple(StoreKind.of(k) for k in self.stores))
        known = _REGISTRY.get(self.name)
        if known is not None and known != self:
            raise ValueError(f"node kind {self.name!r} is already defined differently: {known}")
        _REGISTRY.setdefault(self.name, self)

    def describe_as(self) -> str:
        """``Source``, ``Sink`` or ``Processor``: how ``Topology.describe()`` shows it."""
        return "Source" if self.source else "Sink" if self.sink else "Processor"


def node_kind(name: str) -> NodeKind:
    """The registered spec called ``name``; :class:`UnknownNodeKind` if there is none."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownNodeKind(name) from None


def find_node_kind(name: str) -> Optional[NodeKind]:
    """The registered spec called ``name``, or ``None``."""
    return _REGISTRY.get(name)


# -- streams ------------------------------------------------------------------------------
SOURCE = NodeKind("source", params=SourceParams, source=True)
SINK = NodeKind("sink", params=SinkParams, sink=True)
REPARTITION = NodeKind("repartition", params=SinkParams, sink=True, repartition=True)
FILTER = NodeKind("filter", params=FilterParams)
MAP = NodeKind("map", params=MapperParams)
MAP_VALUES = NodeKind("map_values", params=MapperParams)
FLAT_MAP = NodeKind("flat_map", params=MapperParams)
FLAT_MAP_VALUES = NodeKind("flat_map_values", params=MapperParams)
SELECT_KEY = NodeKind("select_key", params=MapperParams)
PEEK = NodeKind("peek", params=ActionParams)
FOREACH = NodeKind("foreach", params=ActionParams)
MERGE = NodeKind("merge")
BRANCH = NodeKind("branch", params=BranchParams)
BRANCH_CHILD = NodeKind("branch_child", params=BranchChildParams)
COLUMN = NodeKind("column", params=ColumnParams, spark_only=True)

# -- tables -------------------------------------------------------------------------------
TO_STREAM = NodeKind("to_stream", params=ToStreamParams, new_value_only=True)
TABLE_SOURCE = NodeKind("table_source", params=StoreParams, stores=(StoreKind.KV,), materialized="named")
TABLE_FILTER = NodeKind("table_filter", params=TableFilterParams, derived_table=True, materializable=True,
                        stores=(StoreKind.KV,), materialized="named or parent")
TABLE_MAP_VALUES = NodeKind("table_map_values", params=TableMapValuesParams, derived_table=True, materializable=True,
                            stores=(StoreKind.KV,), materialized="named or parent")
TABLE_SELECT = NodeKind("table_select", params=TableSelectParams)
GLOBAL_SOURCE = NodeKind("global_source", params=GlobalSourceParams, global_table=True)
GLOBAL_TABLE_SOURCE = NodeKind("global_table_source", params=StoreParams, global_table=True, stores=(StoreKind.KV,))

# -- aggregations -------------------------------------------------------------------------
AGGREGATE = NodeKind("aggregate", params=AggregateParams, stores=(StoreKind.KV,), materialized="always")
#: a grouped stream's ``count()``: an aggregate whose cached result per commit depends
#: only on how many records each key had, so it has a batch path (and a Spark lowering)
COUNT = NodeKind("count", params=AggregateParams, stores=(StoreKind.KV,), materialized="always")
TABLE_AGGREGATE = NodeKind("table_aggregate", params=TableAggregateParams, stores=(StoreKind.KV,),
                           materialized="always")
WINDOW_AGGREGATE = NodeKind("window_aggregate", params=WindowAggregateParams, time_aware=True,
                            stores=(StoreKind.WINDOW,), materialized="always")
SLIDING_AGGREGATE = NodeKind("sliding_aggregate", params=WindowAggregateParams, time_aware=True,
                             stores=(StoreKind.WINDOW,), materialized="always")
SESSION_AGGREGATE = NodeKind("session_aggregate", params=SessionAggregateParams, time_aware=True,
                             stores=(StoreKind.SESSION,), materialized="always")
SUPPRESS = NodeKind("suppress", params=SuppressParams, time_aware=True, stores=(StoreKind.BUFFER,),
                    materialized="parent")

# -- joins --------------------------------------------------------------------------------
STREAM_TABLE_JOIN = NodeKind("stream_table_join", params=StreamTableJoinParams, stores=TABLE_STORES)
STREAM_TABLE_JOIN_VERSIONED = NodeKind("stream_table_join_versioned", params=VersionedJoinParams, time_aware=True,
                                       stores=(StoreKind.VERSIONED, StoreKind.STREAM_BUFFER))
STREAM_TABLE_JOIN_UPDATE = NodeKind("stream_table_join_update", params=VersionedJoinParams, new_value_only=True,
                                    every_update=True, stores=(StoreKind.VERSIONED, StoreKind.STREAM_BUFFER))
TABLE_JOIN = NodeKind("table_join", params=TableJoinParams, derived_table=True, stores=TABLE_STORES)
TABLE_JOIN_MERGE = NodeKind("table_join_merge", params=StoreParams, derived_table=True, materializable=True,
                            stores=(StoreKind.KV,), materialized="always")
JOIN_WINDOW = NodeKind("join_window", params=JoinWindowParams, stores=(StoreKind.WINDOW,))
STREAM_JOIN = NodeKind("stream_join", params=StreamJoinParams, stores=(StoreKind.WINDOW,))
STREAM_OUTER_JOIN = NodeKind("stream_outer_join", params=StreamJoinParams, time_aware=True,
                             stores=(StoreKind.WINDOW, StoreKind.JOIN_OUTER))
GLOBAL_JOIN = NodeKind("global_join", params=GlobalJoinParams)
FK_LEFT_SEND = NodeKind("fk_left_send")
FK_SUBSCRIBE = NodeKind("fk_subscribe", params=FkSubscribeParams)
FK_SUBSCRIPTION_JOIN = NodeKind("fk_subscription_join", params=FkSubscriptionJoinParams,
                                stores=(StoreKind.RAW,) + TABLE_STORES)
FK_FOREIGN_CHANGE = NodeKind("fk_foreign_change", params=FkForeignChangeParams, stores=(StoreKind.RAW,))
FK_LEFT_REPLICA = NodeKind("fk_left_replica", params=StoreParams, stores=(StoreKind.KV,))
FK_RESPONSE_JOIN = NodeKind("fk_response_join", params=FkResponseJoinParams, stores=(StoreKind.KV,))

# -- the Processor API ----------------------------------------------------------------------
#: ``KStream.process``: a user processor, with any kind of store it is connected to
PROCESS = NodeKind("process", params=ProcessParams, time_aware=True, task_state=True,
                   stores=USER_STORES)
#: ``KStream.process_values``: the same, keys unchanged
PROCESS_VALUES = NodeKind("process_values", params=ProcessParams, time_aware=True, task_state=True,
                          stores=USER_STORES)

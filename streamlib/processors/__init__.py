"""The operators that run inside a task: plain Python, shared by the test driver
and Spark tasks. :func:`build_processors` wires a sub-topology's nodes."""
from __future__ import annotations

from ..topology import SubTopology, Topology, TopologyError
from .aggregate import StreamAggregateProcessor, TableAggregateProcessor
from .base import Processor, ProcessorContext, ProcessingError
from .fk_joins import (ForeignChangeProcessor, ForeignKeyLeftSendProcessor, LeftReplicaProcessor,
                       ResponseJoinProcessor, SubscribeProcessor, SubscriptionJoinProcessor)
from .global_joins import GlobalTableJoinProcessor
from .io import DeserializationFailure, SinkProcessor, SourceProcessor
from .joins import StreamTableJoinProcessor
from .record import Change, Record
from .session import SessionWindowAggregateProcessor
from .sliding import SlidingWindowAggregateProcessor
from .stateless import (BranchProcessor, FilterProcessor, FlatMapProcessor, FlatMapValuesProcessor,
                        MapProcessor, MapValuesProcessor, PassThroughProcessor, PeekProcessor,
                        SelectKeyProcessor, ToStreamProcessor)
from .stores import TimestampedKeyValueStore
from .stream_joins import JoinWindowProcessor, OuterStreamJoinProcessor, StreamJoinProcessor
from .suppress import SuppressProcessor
from .table_joins import TableJoinMergeProcessor, TableJoinProcessor
from .tables import (TableFilterProcessor, TableMapValuesProcessor, TableSelectProcessor,
                     TableSourceProcessor)
from .versioned_join import VersionedStreamTableJoinProcessor, VersionedTableUpdateProcessor
from .windowed import TimeWindowAggregateProcessor


class ForeachProcessor(PeekProcessor):
    """Terminal ``foreach``: a peek with no children."""


PROCESSORS: dict[str, type[Processor]] = {
    "source": SourceProcessor,
    "sink": SinkProcessor,
    "repartition": SinkProcessor,
    "filter": FilterProcessor,
    "map": MapProcessor,
    "map_values": MapValuesProcessor,
    "flat_map": FlatMapProcessor,
    "flat_map_values": FlatMapValuesProcessor,
    "select_key": SelectKeyProcessor,
    "peek": PeekProcessor,
    "foreach": ForeachProcessor,
    "merge": PassThroughProcessor,
    "branch": BranchProcessor,
    "branch_child": PassThroughProcessor,
    "to_stream": ToStreamProcessor,
    "table_source": TableSourceProcessor,
    "table_filter": TableFilterProcessor,
    "table_map_values": TableMapValuesProcessor,
    "table_select": TableSelectProcessor,
    "aggregate": StreamAggregateProcessor,
    "table_aggregate": TableAggregateProcessor,
    "window_aggregate": TimeWindowAggregateProcessor,
    "sliding_aggregate": SlidingWindowAggregateProcessor,
    "session_aggregate": SessionWindowAggregateProcessor,
    "suppress": SuppressProcessor,
    "stream_table_join": StreamTableJoinProcessor,
    "stream_table_join_versioned": VersionedStreamTableJoinProcessor,
    "stream_table_join_update": VersionedTableUpdateProcessor,
    "table_join": TableJoinProcessor,
    "table_join_merge": TableJoinMergeProcessor,
    "join_window": JoinWindowProcessor,
    "stream_join": StreamJoinProcessor,
    "stream_outer_join": OuterStreamJoinProcessor,
    "global_join": GlobalTableJoinProcessor,
    "fk_left_send": ForeignKeyLeftSendProcessor,
    "fk_subscribe": SubscribeProcessor,
    "fk_subscription_join": SubscriptionJoinProcessor,
    "fk_foreign_change": ForeignChangeProcessor,
    "fk_left_replica": LeftReplicaProcessor,
    "fk_response_join": ResponseJoinProcessor,
}


def build_processors(topology: Topology, sub: SubTopology,
                     context: ProcessorContext) -> dict[str, Processor]:
    """Instantiate and wire the processors of one sub-topology, in topological order."""
    processors: dict[str, Processor] = {}
    for name in sub.nodes:
        node = topology.nodes[name]
        if node.kind == "column":
            raise TopologyError(f"{name} is a Spark Column expression; it runs only through "
                                "Spark (Streams), not in TopologyTestDriver")
        try:
            cls = PROCESSORS[node.kind]
        except KeyError:
            raise TopologyError(f"{name}: no processor for node kind {node.kind!r}") from None
        processors[name] = cls(node, context)
        processors[name].send_old_values = topology.sends_old_values(name)
        processors[name].caching = context.caching and all(
            topology.stores[store].caching for store in node.stores)
    for name in sub.nodes:
        for parent in topology.nodes[name].parents:
            processors[parent].children.append(processors[name])
    return processors


__all__ = ["build_processors", "Processor", "ProcessorContext", "ProcessingError",
           "DeserializationFailure", "Record", "Change", "SourceProcessor", "SinkProcessor",
           "TimestampedKeyValueStore", "PROCESSORS"]

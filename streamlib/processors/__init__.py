"""The operators that run inside a task: plain Python, shared by the test driver
and Spark tasks. :func:`build_processors` wires a sub-topology's nodes.

Each processor class registers the node kinds it runs with ``@processes(KIND)``
(:mod:`.registry`); importing this package imports, so registers, every built-in one."""
from __future__ import annotations

from ..topology import SubTopology, Topology
from .aggregate import StreamAggregateProcessor, StreamCountProcessor, TableAggregateProcessor
from .base import Processor, ProcessorContext, ProcessingError
from .fk_joins import (ForeignChangeProcessor, ForeignKeyLeftSendProcessor, LeftReplicaProcessor,
                       ResponseJoinProcessor, SubscribeProcessor, SubscriptionJoinProcessor)
from .global_joins import GlobalTableJoinProcessor
from .io import DeserializationFailure, SinkProcessor, SourceProcessor
from .joins import StreamTableJoinProcessor
from .record import Change, Record
from .registry import PROCESSORS, processes, processor_for
from .session import SessionWindowAggregateProcessor
from .sliding import SlidingWindowAggregateProcessor
from .stateless import (BranchProcessor, FilterProcessor, FlatMapProcessor, FlatMapValuesProcessor,
                        MapProcessor, MapValuesProcessor, PassThroughProcessor, PeekProcessor,
                        SelectKeyProcessor, ToStreamProcessor, ForeachProcessor)
from .stores import TimestampedKeyValueStore
from .stream_joins import JoinWindowProcessor, OuterStreamJoinProcessor, StreamJoinProcessor
from .suppress import SuppressProcessor
from .table_joins import TableJoinMergeProcessor, TableJoinProcessor
from .tables import (TableFilterProcessor, TableMapValuesProcessor, TableSelectProcessor,
                     TableSourceProcessor)
from .user import UserProcessorNode
from .versioned_join import VersionedStreamTableJoinProcessor, VersionedTableUpdateProcessor
from .windowed import TimeWindowAggregateProcessor


def build_processors(topology: Topology, sub: SubTopology,
                     context: ProcessorContext) -> dict[str, Processor]:
    """Instantiate and wire the processors of one sub-topology, in topological order."""
    processors: dict[str, Processor] = {}
    for name in sub.nodes:
        node = topology.nodes[name]
        processors[name] = processor_for(node)(node, context)
        processors[name].send_old_values = topology.sends_old_values(name)
        processors[name].caching = context.caching and all(
            topology.stores[store].caching for store in node.stores) and not topology.forwards_at_once(name)
        if isinstance(processors[name], ResponseJoinProcessor):
            processors[name].in_order = topology.fk_self_join_inputs(name) is not None
    for name in sub.nodes:
        for parent in topology.nodes[name].parents:
            processors[parent].children.append(processors[name])
    return processors


__all__ = ["build_processors", "Processor", "ProcessorContext", "ProcessingError",
           "DeserializationFailure", "Record", "Change", "SourceProcessor", "SinkProcessor",
           "TimestampedKeyValueStore", "PROCESSORS", "processes"]

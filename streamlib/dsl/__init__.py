"""The DSL: every call adds a node to a logical graph; nothing executes here."""
from .builder import StreamsBuilder
from .global_table import GlobalKTable
from .grouped import KGroupedStream, KGroupedTable
from .kstream import BranchedKStream, KStream
from .ktable import KTable
from .options import Consumed, Grouped, Joined, Materialized, Produced, Repartitioned, Suppressed

__all__ = ["StreamsBuilder", "KStream", "KTable", "GlobalKTable", "KGroupedStream", "KGroupedTable", "BranchedKStream",
           "Consumed", "Grouped", "Joined", "Materialized", "Produced", "Repartitioned", "Suppressed"]

"""A sub-topology that is one straight stateless chain, run over whole columns.

``source -> filter/map/map_values/flat_map/flat_map_values/select_key... -> sink``:
the source decodes the key and value columns at once
(:meth:`Serde.deserialize_column`) and the chain runs over Python lists
(``processors.columnar``). Anything unusual (a payload the serde rejects, a user
function that raises, an object the sink's serde cannot encode, an invalid
timestamp) makes :meth:`FusedChain.run` return ``None``, and the task processes the
same rows record by record, which reports it exactly as before: the
deserialization handler with topic/partition/offset, the error naming the node and
the record.
"""
from __future__ import annotations

from typing import Optional

import pyarrow as pa
import pyarrow.compute as pc

from ..processors import Processor, ProcessorContext, SinkProcessor, SourceProcessor
from ..processors.columnar import chain_below, run_chain
from ..processors.io import timestamps_valid


class FusedChain:
    """One source, stateless steps each with one child, one sink: run over columns."""

    def __init__(self, source: SourceProcessor, steps: list[Processor], sink: SinkProcessor,
                 context: ProcessorContext):
        self.source = source
        self.steps = steps
        self.sink = sink
        self.context = context

    @staticmethod
    def of(processors: dict[str, Processor], context: ProcessorContext) -> Optional["FusedChain"]:
        """The chain of an (initialised) sub-topology's processors, if it is one."""
        sources = [p for p in processors.values() if type(p) is SourceProcessor]
        if len(sources) != 1:
            return None
        source = sources[0]
        if source.extractor is not None or source.changes:
            return None
        found = chain_below(source)
        if found is None or len(found[0]) + 2 != len(processors):
            return None
        return FusedChain(source, found[0], found[1], context)

    def run(self, rows: pa.Table) -> Optional[pa.Table]:
        """The ``OUTPUT_SCHEMA`` rows that processing ``rows`` (in processing order)
        emits, counting them in and advancing stream time; ``None`` if anything is
        unusual, with nothing changed: process them record by record instead."""
        timestamps = rows.column("timestamp")
        if not timestamps_valid(timestamps, self.source.latest_allowed()):
            return None
        source = self.source
        try:
            keys = source.key_serde.deserialize_column(rows.column("key"))
            values = source.value_serde.deserialize_column(rows.column("value"))
            output = run_chain(self.steps, self.sink, keys, values, timestamps, rows.column("headers"))
        except Exception:  # noqa: BLE001 - the record-at-a-time path reports it precisely
            return None
        context = self.context
        context.count("records_in", rows.num_rows)
        newest = pc.max(timestamps).as_py()
        if newest > context.stream_time:
            context.stream_time = newest
        return output

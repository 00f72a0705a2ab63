"""Building the stream–table join with a grace period (see
:mod:`streamlib.processors.versioned_join`): two join nodes over a versioned store and
a stream buffer, and a merge of their results."""
from __future__ import annotations

from typing import Any, Callable

from ..node_kinds import MERGE, STREAM_TABLE_JOIN_UPDATE, STREAM_TABLE_JOIN_VERSIONED
from ..state.kinds import StoreKind
from ..topology import StoreDef, TopologyError
from .graph import GraphBuilder
from .options import Joined


def versioned_join(graph: GraphBuilder, stream: Any, table: Any, joiner: Callable[[Any, Any], Any],
                   joined: Joined, left: bool) -> str:
    """Add ``stream.join(table, joiner, joined)`` (``left_join`` if ``left``) with
    ``joined.grace_ms > 0``; returns the node the result stream continues from."""
    prefix = "KSTREAM-LEFTJOIN" if left else "KSTREAM-JOIN"
    key_serde = joined.key_serde or stream.key_serde or table.key_serde
    grace = joined.grace_ms
    # Kafka's StreamTableJoinNode refuses a grace longer than the table's history
    history = table._history_ms if table._history_ms is not None else grace
    if grace > history:
        raise TopologyError(f"{prefix}: the grace ({grace} ms) is longer than the history retention "
                            f"({history} ms) of the versioned table {table.query_name!r}")
    if joined.name is not None:
        versions, buffer = f"{joined.name}-versions", f"{joined.name}-buffer"
    else:
        versions = graph.internal_store_name(f"{prefix}-VERSIONS")
        buffer = graph.internal_store_name(f"{prefix}-BUFFER")
    graph.add_store(StoreDef(versions, StoreKind.VERSIONED, key_serde,
                             joined.other_value_serde or table.value_serde, queryable=False,
                             caching=False, retention_ms=history), user_named=False, step=prefix)
    graph.add_store(StoreDef(buffer, StoreKind.STREAM_BUFFER, key_serde, joined.value_serde or stream.value_serde,
                             queryable=False, caching=False, retention_ms=grace),
                    user_named=False, step=prefix)
    params = dict(versions=versions, buffer=buffer, joiner=joiner, left=left, grace_ms=grace)
    stream_side = graph.add(prefix, STREAM_TABLE_JOIN_VERSIONED, [stream.node_name],
                            name=joined.name, stores=(versions, buffer), **params)
    table_side = graph.add("KTABLE-JOINUPDATES", STREAM_TABLE_JOIN_UPDATE, [table.node_name],
                           stores=(versions, buffer), **params)
    return graph.add("KSTREAM-MERGE", MERGE, [stream_side, table_side])

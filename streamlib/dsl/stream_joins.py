"""The DSL side of stream–stream joins: the nodes and stores ``KStream.join(stream, ...)``
adds (laid out and named as Kafka Streams' ``KStreamImplJoin``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from ..node_kinds import JOIN_WINDOW, MERGE, STREAM_JOIN, STREAM_OUTER_JOIN
from ..state.kinds import StoreKind
from ..topology import StoreDef, TopologyError
from ..windows import JoinWindows
from .options import Joined

if TYPE_CHECKING:
    from .kstream import KStream

#: (this side outer, other side outer) per join kind
_OUTER = {"join": (False, False), "left_join": (True, False), "outer_join": (True, True)}


def stream_stream_join(this: "KStream", other: "KStream", joiner: Callable[[Any, Any], Any],
                       windows: Any, how: str, joined: Optional[Joined] = None) -> "KStream":
    """Join ``this`` with ``other`` within ``windows`` (a :class:`JoinWindows`): ``how`` is
    ``"join"``, ``"left_join"`` or ``"outer_join"``. A side whose key changed upstream is
    repartitioned first, so both sides are co-partitioned."""
    from .kstream import KStream
    from .ktable import Reversed
    if not isinstance(windows, JoinWindows):
        raise TopologyError(f"{how}(): a stream–stream join needs JoinWindows as its third "
                            f"argument, e.g. JoinWindows.of_time_difference(...), got {windows!r}")
    if other._graph is not this._graph:
        raise TopologyError(f"{how}(): both streams must come from the same StreamsBuilder")
    joined = joined or Joined()
    key_serde = joined.key_serde or this.key_serde or other.key_serde
    this_serde = joined.value_serde or this.value_serde
    other_serde = joined.other_value_serde or other.value_serde
    left = this._join_repartition(Joined(key_serde, this_serde)) if this._repartition_required else this
    right = (other._join_repartition(Joined(key_serde, other_serde))
             if other._repartition_required else other)
    graph = this._graph
    left_outer, right_outer = _OUTER[how]
    # Named in Kafka's order; each ``graph.add(name=...)`` below takes the next index.
    this_window, other_window, this_join, other_join, merge = (
        f"{prefix}-{graph._index + i:010d}" for i, prefix in enumerate((
            "KSTREAM-WINDOWED", "KSTREAM-WINDOWED",
            "KSTREAM-OUTERTHIS" if right_outer else "KSTREAM-JOINTHIS",
            "KSTREAM-OUTEROTHER" if left_outer else "KSTREAM-JOINOTHER", "KSTREAM-MERGE")))
    this_store, other_store = f"{this_join}-store", f"{other_join}-store"
    for store, serde in ((this_store, this_serde), (other_store, other_serde)):
        graph.add_store(StoreDef(store, StoreKind.WINDOW, key_serde, serde, logging=True, queryable=False,
                                 caching=False, window_size_ms=windows.size_ms,
                                 retention_ms=windows.retention_ms, retain_duplicates=True),
                        user_named=False, step="KSTREAM-JOIN")
    outer_store = None
    if left_outer:
        outer_store = f"KSTREAM-OUTERSHARED-{this_join.rsplit('-', 1)[1]}-store"   # Kafka's name
        graph.add_store(StoreDef(outer_store, StoreKind.JOIN_OUTER, logging=True, queryable=False,
                                 caching=False), user_named=False, step="KSTREAM-OUTERSHARED")
    graph.add("KSTREAM-WINDOWED", JOIN_WINDOW, [left._node], name=this_window,
              stores=(this_store,), store=this_store, retention_ms=windows.retention_ms)
    graph.add("KSTREAM-WINDOWED", JOIN_WINDOW, [right._node], name=other_window,
              stores=(other_store,), store=other_store, retention_ms=windows.retention_ms)
    kind = STREAM_OUTER_JOIN if outer_store else STREAM_JOIN
    extra = (outer_store,) if outer_store else ()
    common = dict(before_ms=windows.before_ms, after_ms=windows.after_ms, grace_ms=windows.grace_ms,
                  retention_ms=windows.retention_ms, join=merge, outer_store=outer_store,
                  key_serde=key_serde)
    graph.add("KSTREAM-JOINTHIS", kind, [this_window], name=this_join, stores=(other_store,) + extra,
              other_store=other_store, joiner=joiner, left_side=True, outer=left_outer,
              value_serde=this_serde, other_value_serde=other_serde, **common)
    graph.add("KSTREAM-JOINOTHER", kind, [other_window], name=other_join,
              stores=(this_store,) + extra, other_store=this_store, joiner=Reversed(joiner),
              left_side=False, outer=right_outer, value_serde=other_serde,
              other_value_serde=this_serde, **common)
    graph.add("KSTREAM-MERGE", MERGE, [this_join, other_join], name=merge)
    return KStream(graph, merge, key_serde, None)

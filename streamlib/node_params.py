"""The parameters of each node kind: one frozen dataclass per shape of node.

A :class:`~streamlib.node_kinds.NodeKind` names its ``params`` type; a graph node's
``params`` is an instance of it, read by attribute (``node.params.mapper``), so a
misspelt or missing parameter fails where the node is made, not at its first record.
They are slotted and pickle their values only (topologies are pickled to Spark's
executors).

Serdes left ``None`` mean "the application's default"; the fields that hold serdes say
which default (``default_serde`` metadata) and :meth:`Topology.resolve
<streamlib.topology.Topology.resolve>` fills them once from the config the topology
runs with, so no processor or Spark step looks the defaults up itself.

Examples
--------
>>> from streamlib.node_params import MapperParams, SinkParams, serde_defaults
>>> MapperParams(mapper=str.upper).mapper("a")
'A'
>>> [name for name, _ in serde_defaults(SinkParams)]
['key_serde', 'value_serde']
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:
    from .state.kinds import StoreKind

#: ``default_serde`` metadata: which of the config's default serdes a ``None`` stands for
_KEY, _VALUE = "key", "value"


def _serde(default: str) -> Any:
    return field(default=None, metadata={"default_serde": default})


@lru_cache(maxsize=None)
def serde_defaults(params_type: type) -> tuple[tuple[str, str], ...]:
    """``(field name, "key" or "value")`` of each serde field of ``params_type``."""
    return tuple((f.name, f.metadata["default_serde"]) for f in fields(params_type)
                 if "default_serde" in f.metadata)


def param_values(params: Any) -> list[Any]:
    """The values of a params object, in field order (for walking a node's functions)."""
    return [getattr(params, f.name) for f in fields(params)]


class AggregateOp(enum.Enum):
    """Which DSL call made an aggregation: its processor's per-record step is the same,
    but ``reduce`` starts from the first value and ``count`` has batch paths."""

    COUNT = "count"
    REDUCE = "reduce"
    AGGREGATE = "aggregate"


class TableJoinMode(enum.Enum):
    """How one side of a table–table join treats a change of its row when the other side
    has no row for the key: ``INNER`` and ``RIGHT`` emit nothing, ``LEFT`` and ``OUTER``
    emit ``joiner(value, None)``. ``RIGHT`` is the other side of a left join: a change
    there emits ``joiner(left, value)`` only when the left side has a row."""

    INNER = "inner"
    LEFT = "left"
    RIGHT = "right"
    OUTER = "outer"

    @property
    def other_side(self) -> "TableJoinMode":
        """The mode of the join's other side (a left join is a right join seen from there)."""
        return _OTHER_SIDE.get(self, self)

    @property
    def keeps_unmatched(self) -> bool:
        """This side's rows are in the result even without a match (so its parent must
        send old values: a result may have to be taken back)."""
        return self in (TableJoinMode.LEFT, TableJoinMode.OUTER)


_OTHER_SIDE = {TableJoinMode.LEFT: TableJoinMode.RIGHT, TableJoinMode.RIGHT: TableJoinMode.LEFT}


class ColumnOp(enum.Enum):
    """What a Spark ``Column`` step does with its expression."""

    FILTER = "filter"
    MAP_VALUES = "map_values"
    FLAT_MAP_VALUES = "flat_map_values"
    SELECT_KEY = "select_key"


_params = dataclass(frozen=True, slots=True, kw_only=True)


@_params
class NoParams:
    """A kind whose nodes need nothing but their parents (``merge``)."""


# -- streams ----------------------------------------------------------------------------------
@_params
class SourceParams:
    topics: list[str]
    key_serde: Any = _serde(_KEY)
    value_serde: Any = _serde(_VALUE)
    timestamp_extractor: Optional[Callable[..., int]] = None
    #: reads a repartition topic streamlib writes (named after the application)
    internal: bool = False
    num_partitions: Optional[int] = None
    #: the records are a table's changes (old and new value)
    changes: bool = False


@_params
class SinkParams:
    """A sink to a topic, or a repartition (one processor writes both)."""

    topic: str
    key_serde: Any = _serde(_KEY)
    value_serde: Any = _serde(_VALUE)
    partitioner: Optional[Callable[..., Any]] = None
    #: repartitions only: a fixed partition count, and whether it carries a table's changes
    num_partitions: Optional[int] = None
    changes: bool = False


@_params
class FilterParams:
    predicate: Callable[[Any, Any], bool]
    negate: bool = False


@_params
class MapperParams:
    """``map``, ``map_values``, ``flat_map``, ``flat_map_values``, ``select_key``."""

    mapper: Callable[..., Any]


@_params
class ActionParams:
    """``peek`` and ``foreach``."""

    action: Callable[[Any, Any], None]


@_params
class BranchParams:
    predicates: list[Callable[[Any, Any], bool]]
    with_default: bool


@_params
class BranchChildParams:
    index: int


@_params
class ColumnParams:
    op: ColumnOp
    #: a pyspark ``Column`` over ``key``/``value``
    column: Any
    negate: bool = False


# -- tables -----------------------------------------------------------------------------------
@_params
class StoreParams:
    """A table step whose only parameter is its store (``None``: not materialized)."""

    store: Optional[str] = None


@_params
class ToStreamParams:
    mapper: Optional[Callable[[Any, Any], Any]] = None


@_params
class TableFilterParams:
    predicate: Callable[[Any, Any], bool]
    negate: bool = False
    store: Optional[str] = None


@_params
class TableMapValuesParams:
    mapper: Callable[[Any], Any]
    store: Optional[str] = None


@_params
class TableSelectParams:
    selector: Callable[[Any, Any], tuple]


@_params
class GlobalSourceParams:
    topics: list[str]


# -- aggregations -----------------------------------------------------------------------------
@_params
class AggregateParams:
    """A grouped stream's ``aggregate``, ``reduce`` or ``count``."""

    store: str
    initializer: Optional[Callable[[], Any]]
    aggregator: Callable[[Any, Any, Any], Any]
    op: AggregateOp


@_params
class TableAggregateParams:
    store: str
    initializer: Optional[Callable[[], Any]]
    adder: Callable[[Any, Any, Any], Any]
    subtractor: Callable[[Any, Any, Any], Any]
    op: AggregateOp


@_params
class WindowAggregateParams:
    """A time or sliding windowed aggregation."""

    store: str
    windows: Any
    initializer: Optional[Callable[[], Any]]
    aggregator: Callable[[Any, Any, Any], Any]
    op: AggregateOp
    retention_ms: int
    #: ``EmitStrategy.on_window_close()``: one final result per window
    emit_final: bool = False


@_params
class SessionAggregateParams(WindowAggregateParams):
    merger: Callable[[Any, Any, Any], Any]


@_params
class SuppressParams:
    store: str
    grace_ms: int
    final: bool = True
    max_records: Optional[int] = None
    max_bytes: Optional[int] = None
    emit_early: bool = False
    #: how a windowed table's keys look on the wire (``dsl.windowed.WindowedKeys``)
    windowed_keys: Any = None
    key_serde: Any = _serde(_KEY)
    value_serde: Any = _serde(_VALUE)


# -- joins ------------------------------------------------------------------------------------
@_params
class StreamTableJoinParams:
    store: str
    joiner: Callable[[Any, Any], Any]
    left: bool


@_params
class VersionedJoinParams:
    """Both sides of a stream–table join with a grace period."""

    versions: str
    buffer: str
    joiner: Callable[[Any, Any], Any]
    left: bool
    grace_ms: int


@_params
class TableJoinParams:
    store: str
    joiner: Callable[[Any, Any], Any]
    #: seen from this side
    mode: TableJoinMode
    parent_sends_old_values: bool = False


@_params
class JoinWindowParams:
    store: str
    retention_ms: int


@_params
class StreamJoinParams:
    """One side of a windowed stream–stream join (inner or outer)."""

    other_store: str
    joiner: Callable[[Any, Any], Any]
    left_side: bool
    outer: bool
    before_ms: int
    after_ms: int
    grace_ms: int
    retention_ms: int
    #: the merge node both sides forward to (names the join's shared task state)
    join: str
    outer_store: Optional[str] = None
    key_serde: Any = _serde(_KEY)
    value_serde: Any = _serde(_VALUE)
    other_value_serde: Any = _serde(_VALUE)


@_params
class GlobalJoinParams:
    global_store: str
    key_selector: Callable[[Any, Any], Any]
    joiner: Callable[[Any, Any], Any]
    left: bool


@_params
class FkJoinParams:
    """What every step of a foreign-key join knows: both tables' serdes."""

    left: bool
    key_serde: Any = _serde(_KEY)
    value_serde: Any = _serde(_VALUE)
    fk_serde: Any = _serde(_KEY)
    right_value_serde: Any = _serde(_VALUE)


@_params
class FkSubscribeParams(FkJoinParams):
    foreign_key_extractor: Callable[[Any], Any]
    parent_sends_old_values: bool = True


@_params
class FkSubscriptionJoinParams(FkJoinParams):
    subscriptions: str
    store: str


@_params
class FkForeignChangeParams(FkJoinParams):
    subscriptions: str


@_params
class FkResponseJoinParams(FkJoinParams):
    store: str
    joiner: Callable[[Any, Any], Any]


# -- the Processor API --------------------------------------------------------------------------
@_params
class ProcessParams:
    supplier: Any
    #: store name -> ``StoreDef.kind``, filled at ``build()`` (stores may be added later)
    store_kinds: dict[str, StoreKind] = field(default_factory=dict)
    #: windowed store name -> retention
    retention: dict[str, int] = field(default_factory=dict)

"""One builder per store kind: the processor-side store and the query view of a StoreDef.

The task runtime, the ``TopologyTestDriver`` and ``Streams.store()`` all build stores
here, so a kind's stores are added in one place (``STORE_KINDS``, keyed by
:class:`~streamlib.state.kinds.StoreKind`).
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from ...config import StreamsConfig
from ...serdes import Serde
from ...state.kinds import StoreKind
from ...state.kv import KeyValueStore
from ...state.reads import KeyValueReads
from ...topology import StoreDef
from .buffer import TimeOrderedBuffer
from .duplicates import DuplicatesWindowStore, DuplicatesWindowStoreView, OuterJoinBuffer
from .raw import RawStore
from .keyvalue import KeyValueStoreView, TimestampedKeyValueStore
from .session import SessionStore, SessionStoreView
from .stream_buffer import StreamBuffer
from .versioned import VersionedKeyValueStore
from .window import TimestampedWindowStore, WindowStoreView

#: (store def, byte store or reads, key serde, value serde) -> store
Build = Callable[[StoreDef, Any, Serde, Serde], Any]


def _not_queryable(d: StoreDef, *_: Any) -> Any:
    raise ValueError(f"store {d.name!r} is an internal {d.kind.label} store; it cannot be queried")


def _window_store(d: StoreDef, s: Any, k: Serde, v: Serde) -> Any:
    """A window store; with ``retain_duplicates`` one that keeps every record (joins)."""
    cls = DuplicatesWindowStore if d.retain_duplicates else TimestampedWindowStore
    return cls(d.name, s, k, v, d.window_size_ms)


def _window_view(d: StoreDef, s: Any, k: Serde, v: Serde) -> Any:
    cls = DuplicatesWindowStoreView if d.retain_duplicates else WindowStoreView
    return cls(d.name, s, k, v, d.window_size_ms)


class StoreBuilders(NamedTuple):
    """What a store kind is in a task (``typed``) and to a query (``view``)."""

    typed: Build
    view: Build
    #: byte-store entries per user record: 2 for the kinds over a :mod:`.layout` (data
    #: and time index; a meta key more is lost in the division)
    entries_per_record: int = 1


STORE_KINDS: dict[StoreKind, StoreBuilders] = {
    StoreKind.KV: StoreBuilders(lambda d, s, k, v: TimestampedKeyValueStore(d.name, s, k, v),
                                lambda d, s, k, v: KeyValueStoreView(d.name, s, k, v)),
    StoreKind.WINDOW: StoreBuilders(_window_store, _window_view, 2),
    StoreKind.SESSION: StoreBuilders(lambda d, s, k, v: SessionStore(d.name, s, k, v),
                                     lambda d, s, k, v: SessionStoreView(d.name, s, k, v), 2),
    StoreKind.BUFFER: StoreBuilders(lambda d, s, k, v: TimeOrderedBuffer(d.name, s), _not_queryable),
    # the stream–table join with grace: table history kept for retention_ms (the history
    # retention) behind the table's time, and the stream records of the grace
    StoreKind.VERSIONED: StoreBuilders(
        lambda d, s, k, v: VersionedKeyValueStore(d.name, s, k, v, d.retention_ms), _not_queryable, 2),
    StoreKind.STREAM_BUFFER: StoreBuilders(lambda d, s, k, v: StreamBuffer(d.name, s, k, v), _not_queryable, 2),
    StoreKind.JOIN_OUTER: StoreBuilders(lambda d, s, k, v: OuterJoinBuffer(d.name, s), _not_queryable),
    StoreKind.RAW: StoreBuilders(lambda d, s, k, v: RawStore(d.name, s), _not_queryable),
}


def queryable_kind(kind: StoreKind) -> bool:
    """Whether stores of ``kind`` have a query view (internal buffers have none)."""
    return STORE_KINDS[kind].view is not _not_queryable


#: the kinds with a query view: each has an HTTP route and a table row decoder too
QUERYABLE_KINDS = tuple(kind for kind in StoreKind if queryable_kind(kind))


def entries_per_record(kind: StoreKind) -> int:
    """Byte-store entries one record of a ``kind`` store takes.

    Examples
    --------
    >>> entries_per_record(StoreKind.WINDOW), entries_per_record(StoreKind.KV)
    (2, 1)
    """
    return STORE_KINDS[kind].entries_per_record


def _kind(d: StoreDef) -> StoreBuilders:
    return STORE_KINDS[d.kind]


def _serdes(d: StoreDef, config: StreamsConfig) -> tuple[Serde, Serde]:
    return d.key_serde or config.default_key_serde, d.value_serde or config.default_value_serde


def typed_store(d: StoreDef, store: KeyValueStore, config: StreamsConfig) -> Any:
    """The processor-side store for ``d.kind`` over the task's byte store. Serdes fall
    back to ``config.default_key_serde`` / ``default_value_serde``; for window and
    session stores the key serde is the plain key's (not a windowed serde).

    Examples
    --------
    >>> import tempfile
    >>> from streamlib.config import StreamsConfig
    >>> from streamlib.serdes import Serdes
    >>> from streamlib.state import StoreSpec, open_task_stores
    >>> stores = open_task_stores(tempfile.mkdtemp(), [StoreSpec("w", logging=False)])
    >>> stores.begin(0)
    >>> d = StoreDef("w", kind=StoreKind.WINDOW, key_serde=Serdes.string(), value_serde=Serdes.long(),
    ...              window_size_ms=60_000)
    >>> type(typed_store(d, stores["w"], StreamsConfig())).__name__
    'TimestampedWindowStore'
    >>> stores.close()
    """
    return _kind(d).typed(d, store, *_serdes(d, config))


def query_view(d: StoreDef, reads: KeyValueReads, config: StreamsConfig) -> Any:
    """The read-only, typed query view for ``d.kind`` over ``reads`` (the task's byte
    store, or a :class:`~streamlib.state.partitioned.PartitionedReadOnlyStore`)."""
    return _kind(d).view(d, reads, *_serdes(d, config))

"""Stream–table join (Kafka Streams' classic ``KStreamKTableJoin``, grace 0), and the
value getter every join uses to look a key up in a table's store."""
from __future__ import annotations

from typing import Any, Callable, Optional

from ..node_kinds import STREAM_TABLE_JOIN
from .base import Processor
from .record import Record
from .stores import SessionStore, TimestampedKeyValueStore, TimestampedWindowStore
from .registry import processes

#: ``get(key) -> (value, timestamp) | None``: a table's current row for a key
ValueGetter = Callable[[Any], Optional[tuple[Any, int]]]


def value_getter(store: Any) -> ValueGetter:
    """The lookup of a table's current row in its store: key-value stores by key,
    window and session stores by a ``Windowed`` key (its key and window).

    Examples
    --------
    >>> import tempfile
    >>> from streamlib.serdes import Serdes
    >>> from streamlib.state import StoreSpec, open_task_stores
    >>> stores = open_task_stores(tempfile.mkdtemp(), [StoreSpec("t", logging=False)])
    >>> stores.begin(0)
    >>> table = TimestampedKeyValueStore("t", stores["t"], Serdes.string(), Serdes.string())
    >>> table.put("a", "x", 5)
    >>> get = value_getter(table)
    >>> get("a"), get("b")
    (('x', 5), None)
    >>> table.write_back(); stores.commit(); stores.close()
    """
    if isinstance(store, TimestampedKeyValueStore):
        return store.get
    if isinstance(store, TimestampedWindowStore):
        return lambda windowed: store.get(windowed.key, windowed.window.start)
    if isinstance(store, SessionStore):
        return lambda windowed: store.get(windowed.key, windowed.window)
    raise TypeError(f"store {getattr(store, 'name', store)!r} of type {type(store).__name__} "
                    "cannot serve table lookups for a join")


@processes(STREAM_TABLE_JOIN)
class StreamTableJoinProcessor(Processor):
    """``KStream.join(table)`` / ``left_join(table)`` with grace 0: each stream record
    meets the table's row for its key as it is now (processing order, whatever the
    table records' timestamps); table updates alone emit nothing. The result keeps the
    stream record's key, timestamp and headers.

    A record with a ``None`` value, or a ``None`` key in an inner join, is dropped and
    counted in ``dropped_records``; a left join joins a ``None`` key with no row
    (``joiner(v, None)``, Kafka's KIP-962)."""

    def init(self) -> None:
        params = self.node.params
        self.get = value_getter(self.context.store(params.store))
        self.joiner = params.joiner
        self.left = params.left

    def process(self, record: Record) -> None:
        key, value = record.key, record.value
        if value is None or (key is None and not self.left):
            self.drop("null_value" if value is None else "null_key", record)
            return
        row = None if key is None else self.get(key)
        other = None if row is None else row[0]
        if other is not None or self.left:
            self.forward(record.with_value(self.joiner(value, other)))

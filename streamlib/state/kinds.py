"""Store kinds: what a ``StoreDef`` is, as one typed value instead of a string.

Every layer that treats kinds differently keys its own table by a :class:`StoreKind`,
next to the code it owns (the layers import one way, DESIGN.md): the processor-side
store and the query view in :mod:`streamlib.processors.stores.kinds`, the HTTP route
of a key in :mod:`streamlib.query.http`, the table row decoder of ``Streams.table()``
in :mod:`streamlib.spark.store_source`. A new kind is a member here and one entry in
each of those tables; a test checks every queryable kind has all three.

Examples
--------
>>> from streamlib.state.kinds import StoreKind
>>> StoreKind.of("window") is StoreKind.WINDOW, StoreKind.WINDOW.label
(True, 'window')
>>> StoreKind.KV.label, StoreKind.SESSION.windowed
('key-value', True)
"""
from __future__ import annotations

import enum
from typing import Union


class StoreKind(enum.Enum):
    """The kind of a state store; its value is the name topologies print and the HTTP
    endpoint reports (``GET /stores``)."""

    #: timestamped key-value (tables, aggregations)
    KV = "kv"
    #: windows of a time, sliding or join window
    WINDOW = "window"
    SESSION = "session"
    #: table history of a stream–table join with grace
    VERSIONED = "versioned"
    #: suppress's time-ordered buffer
    BUFFER = "buffer"
    #: the stream records a stream–table join with grace keeps
    STREAM_BUFFER = "stream_buffer"
    #: an outer stream–stream join's unmatched records
    JOIN_OUTER = "join_outer"
    #: bytes as written (foreign-key join subscriptions)
    RAW = "raw"

    @classmethod
    def of(cls, kind: Union["StoreKind", str]) -> "StoreKind":
        """``kind``, or the kind named ``kind`` (a clear error for an unknown name)."""
        if isinstance(kind, cls):
            return kind
        try:
            return cls(kind)
        except ValueError:
            raise ValueError(f"unknown store kind {kind!r}; kinds: {[k.value for k in cls]}") from None

    @property
    def label(self) -> str:
        """The kind in messages ("a key-value store")."""
        return _LABELS.get(self, self.value.replace("_", " "))

    @property
    def windowed(self) -> bool:
        """Keys are ``Windowed`` (a window or a session per entry)."""
        return self in (StoreKind.WINDOW, StoreKind.SESSION)


_LABELS = {StoreKind.KV: "key-value", StoreKind.VERSIONED: "versioned key-value"}

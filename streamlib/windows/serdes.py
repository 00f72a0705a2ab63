"""Windowed key serdes in Kafka's wire format, so Java consumers read our windowed output.

- time windowed (``TimeWindowedSerde``): inner key bytes + 8-byte big-endian window start;
  the end is not on the wire, it is ``start + window_size`` (capped at ``2**63 - 1``);
- session windowed (``SessionWindowedSerde``): inner key bytes + 8-byte end + 8-byte start.

Use them through ``Serdes.time_windowed(inner, window_size)`` and ``Serdes.session_windowed(inner)``.
"""
from __future__ import annotations

import struct
from typing import Any

from ..serdes import Serde
from ..time import Duration, to_millis
from .window import MAX_TIMESTAMP, Window, Windowed

_LONG = struct.Struct(">q")
_TWO_LONGS = struct.Struct(">qq")


def _windowed(obj: Any) -> Windowed:
    if not isinstance(obj, Windowed):
        raise TypeError("expected a Windowed key")
    return obj


def _inner_key(inner: Serde, obj: Windowed) -> bytes:
    data = inner.serialize(obj.key)
    if data is None:
        raise TypeError("a windowed key's inner key must not be None")
    return data


class TimeWindowedSerde(Serde):
    """``Windowed`` keys of time (tumbling, hopping, sliding) windows: Kafka's ``TimeWindowedSerde``.

    Examples
    --------
    >>> from streamlib import Serdes
    >>> serde = TimeWindowedSerde(Serdes.string(), 10)
    >>> serde.serialize(Windowed("a", Window(10, 20)))
    b'a\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\n'
    >>> serde.deserialize(b"a" + (10).to_bytes(8, "big"))
    Windowed('a', Window(10, 20))
    """

    def __init__(self, inner: Serde, window_size: Duration):
        self.inner = inner
        self.window_size_ms = to_millis(window_size, "window_size")
        super().__init__(f"time_windowed({inner.name}, {self.window_size_ms})", self._encode, self._decode)

    def _encode(self, obj: Any) -> bytes:
        windowed = _windowed(obj)
        return _inner_key(self.inner, windowed) + _LONG.pack(windowed.window.start)

    def _decode(self, data: bytes) -> Windowed:
        if len(data) < _LONG.size:
            raise ValueError(f"a time-windowed key needs at least {_LONG.size} bytes, got {len(data)}")
        split = len(data) - _LONG.size
        (start,) = _LONG.unpack_from(data, split)
        # Kafka's WindowKeySchema.timeWindowForSize: an end past Long.MAX_VALUE is capped there.
        end = min(start + self.window_size_ms, MAX_TIMESTAMP)
        return Windowed(self.inner.deserialize(bytes(data[:split])), Window(start, end))

    def __reduce__(self):
        # Rebuild from the definition rather than pickling bound methods.
        return (TimeWindowedSerde, (self.inner, self.window_size_ms))

    def __repr__(self) -> str:
        return f"Serdes.time_windowed({self.inner!r}, {self.window_size_ms})"


class SessionWindowedSerde(Serde):
    """``Windowed`` keys of session windows: Kafka's ``SessionWindowedSerde``.

    Examples
    --------
    >>> from streamlib import Serdes
    >>> serde = SessionWindowedSerde(Serdes.string())
    >>> data = serde.serialize(Windowed("a", Window(1, 2)))
    >>> data == b"a" + (2).to_bytes(8, "big") + (1).to_bytes(8, "big")
    True
    >>> serde.deserialize(data)
    Windowed('a', Window(1, 2))
    """

    def __init__(self, inner: Serde):
        self.inner = inner
        super().__init__(f"session_windowed({inner.name})", self._encode, self._decode)

    def _encode(self, obj: Any) -> bytes:
        windowed = _windowed(obj)
        # End before start: Kafka's SessionKeySchema orders sessions by end for its range scans.
        return _inner_key(self.inner, windowed) + _TWO_LONGS.pack(windowed.window.end, windowed.window.start)

    def _decode(self, data: bytes) -> Windowed:
        if len(data) < _TWO_LONGS.size:
            raise ValueError(f"a session-windowed key needs at least {_TWO_LONGS.size} bytes, got {len(data)}")
        split = len(data) - _TWO_LONGS.size
        end, start = _TWO_LONGS.unpack_from(data, split)
        return Windowed(self.inner.deserialize(bytes(data[:split])), Window(start, end))

    def __reduce__(self):
        return (SessionWindowedSerde, (self.inner,))

    def __repr__(self) -> str:
        return f"Serdes.session_windowed({self.inner!r})"

"""What flows between processors: records, and table changes."""
from __future__ import annotations

import struct
from typing import Any, NamedTuple, Optional

Headers = tuple[tuple[str, bytes], ...]


class Record:
    """A record inside a task. ``topic``/``partition``/``offset`` name the input
    record it came from, for error messages."""

    __slots__ = ("key", "value", "timestamp", "headers", "topic", "partition", "offset")

    def __init__(self, key: Any, value: Any, timestamp: int, headers: Headers = (),
                 topic: str = "", partition: int = -1, offset: int = -1):
        self.key = key
        self.value = value
        self.timestamp = timestamp
        self.headers = headers
        self.topic = topic
        self.partition = partition
        self.offset = offset

    def with_(self, key: Any, value: Any) -> "Record":
        return Record(key, value, self.timestamp, self.headers, self.topic, self.partition, self.offset)

    def with_value(self, value: Any) -> "Record":
        return Record(self.key, value, self.timestamp, self.headers, self.topic, self.partition, self.offset)

    def with_key(self, key: Any) -> "Record":
        return Record(key, self.value, self.timestamp, self.headers, self.topic, self.partition, self.offset)

    def with_timestamp(self, timestamp: int) -> "Record":
        return Record(self.key, self.value, timestamp, self.headers, self.topic, self.partition, self.offset)

    def with_headers(self, headers: Any) -> "Record":
        """A copy with ``headers``: a ``dict[str, bytes]`` or ``(name, bytes)`` pairs."""
        return Record(self.key, self.value, self.timestamp, as_headers(headers), self.topic,
                      self.partition, self.offset)

    def where(self) -> str:
        return f"topic {self.topic!r} partition {self.partition} offset {self.offset}"

    def __repr__(self) -> str:
        return f"Record({self.key!r}, {self.value!r}, ts={self.timestamp})"


def as_headers(headers: Any) -> Headers:
    """Headers as records carry them, from a ``dict[str, bytes]`` or ``(name, bytes)`` pairs.

    >>> as_headers({"a": b"1"}), as_headers([("a", b"1")])
    ((('a', b'1'),), (('a', b'1'),))
    """
    if isinstance(headers, tuple) and all(isinstance(h, tuple) for h in headers):
        return headers
    pairs = headers.items() if isinstance(headers, dict) else headers or ()
    return tuple((str(name), bytes(value)) for name, value in pairs)


class Change(NamedTuple):
    """A table update: the key's new value and its previous value (either may be None)."""

    new: Any
    old: Any


_LENGTH = struct.Struct(">i")


def encode_change(new: Optional[bytes], old: Optional[bytes]) -> bytes:
    """Both sides of a change in one payload, for a KTable re-grouping's repartition."""
    parts = []
    for side in (new, old):
        parts.append(_LENGTH.pack(-1) if side is None else _LENGTH.pack(len(side)) + side)
    return b"".join(parts)


def decode_change(data: bytes) -> tuple[Optional[bytes], Optional[bytes]]:
    sides = []
    pos = 0
    for _ in range(2):
        (length,) = _LENGTH.unpack_from(data, pos)
        pos += 4
        if length < 0:
            sides.append(None)
        else:
            sides.append(bytes(data[pos:pos + length]))
            pos += length
    return sides[0], sides[1]


_HEADER_LEN = struct.Struct(">I")


def encode_headers(headers: Headers) -> bytes:
    """Headers as bytes: each name and value with a 4-byte length."""
    parts = []
    for name, value in headers:
        name_bytes = name.encode()
        parts += [_HEADER_LEN.pack(len(name_bytes)), name_bytes, _HEADER_LEN.pack(len(value)), value]
    return b"".join(parts)


def decode_headers(data: bytes, pos: int = 0) -> Headers:
    """The headers :func:`encode_headers` wrote from ``pos`` to the end of ``data``."""
    fields = []
    while pos < len(data):
        (n,) = _HEADER_LEN.unpack_from(data, pos)
        fields.append(bytes(data[pos + 4:pos + 4 + n]))
        pos += 4 + n
    return tuple((fields[i].decode(), fields[i + 1]) for i in range(0, len(fields), 2))

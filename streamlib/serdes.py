"""Serdes: turning keys and values into bytes and back.

Each :class:`Serde` is a pair of plain functions so the runtime can call them in
tight loops; ``None`` always maps to ``None`` (Kafka's tombstone convention).
"""
from __future__ import annotations

import io
import json as _json
import struct
from typing import Any, Callable, Optional


class SerializationError(ValueError):
    """A payload could not be (de)serialized by a serde."""


def _preview(data: bytes, limit: int = 16) -> str:
    head = data[:limit].hex(" ")
    return head + (" ..." if len(data) > limit else "")


class Serde:
    """A named pair of ``serialize(obj) -> bytes`` and ``deserialize(bytes) -> obj``.

    ``check_batch(array)`` (built-in serdes only): whether every value of a binary Arrow
    array deserializes and serializes back to the same bytes, so a batch path may use
    the bytes as they are (None: unknown, records are decoded one by one)."""

    check_batch: Optional[Callable[[Any], bool]] = None

    def __init__(self, name: str, serialize: Callable[[Any], bytes],
                 deserialize: Callable[[bytes], Any],
                 check_batch: Optional[Callable[[Any], bool]] = None):
        self.name = name
        self._serialize = serialize
        self._deserialize = deserialize
        if check_batch is not None:
            self.check_batch = check_batch

    def serialize(self, obj: Any) -> Optional[bytes]:
        if obj is None:
            return None
        try:
            return self._serialize(obj)
        except Exception as exc:
            raise SerializationError(
                f"serde {self.name} cannot serialize {type(obj).__name__} {obj!r:.80}: {exc}") from exc

    def deserialize(self, data: Optional[bytes]) -> Any:
        if data is None:
            return None
        try:
            return self._deserialize(data)
        except Exception as exc:
            raise SerializationError(
                f"serde {self.name} cannot deserialize {len(data)} bytes "
                f"[{_preview(data)}]: {exc}") from exc

    def __repr__(self) -> str:
        return f"Serdes.{self.name}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Serde) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


def _fixed(fmt: str, size: int, kind: str) -> tuple[Callable, Callable]:
    # Closures over the format string (not a struct.Struct) so serdes pickle to executors.
    def encode(obj: Any) -> bytes:
        return struct.pack(fmt, obj)

    def decode(data: bytes) -> Any:
        if len(data) != size:
            raise ValueError(f"{kind} needs exactly {size} bytes, got {len(data)}")
        return struct.unpack(fmt, data)[0]

    return encode, decode


def _all_utf8(array: Any) -> bool:
    """Every value is valid UTF-8 (Arrow's check rejects what Python's decode rejects:
    surrogates, overlong forms, truncated sequences)."""
    import pyarrow as pa

    try:
        array.cast(pa.string())
    except pa.ArrowInvalid:
        return False
    return True


def _any_bytes(array: Any) -> bool:
    return True


def _all_sized(size: int) -> Callable[[Any], bool]:
    def check(array: Any) -> bool:
        import pyarrow.compute as pc

        lengths = pc.binary_length(array)
        return lengths.null_count == len(lengths) or (pc.min(lengths).as_py() == size
                                                      and pc.max(lengths).as_py() == size)
    return check


def _decode_utf8(data: bytes) -> str:
    return bytes(data).decode("utf-8")


def _encode_str(obj: Any) -> bytes:
    if not isinstance(obj, str):
        raise TypeError("expected str")
    return obj.encode("utf-8")


def _encode_bytes(obj: Any) -> bytes:
    if not isinstance(obj, (bytes, bytearray, memoryview)):
        raise TypeError("expected bytes")
    return bytes(obj)


class Serdes:
    """Factory of the built-in serdes (names as in Kafka's ``Serdes``)."""

    @staticmethod
    def string() -> Serde:
        """UTF-8 text."""
        return Serde("string()", _encode_str, _decode_utf8, _all_utf8)

    @staticmethod
    def long() -> Serde:
        """64-bit signed big-endian integer (Kafka's ``LongSerializer``)."""
        return Serde("long()", *_fixed(">q", 8, "long"), _all_sized(8))

    @staticmethod
    def integer() -> Serde:
        """32-bit signed big-endian integer (Kafka's ``IntegerSerializer``)."""
        return Serde("integer()", *_fixed(">i", 4, "integer"), _all_sized(4))

    @staticmethod
    def double() -> Serde:
        """IEEE 754 big-endian double (Kafka's ``DoubleSerializer``)."""
        return Serde("double()", *_fixed(">d", 8, "double"))

    @staticmethod
    def bytes() -> Serde:
        """Raw bytes, unchanged."""
        return Serde("bytes()", _encode_bytes, bytes, _any_bytes)

    @staticmethod
    def json() -> Serde:
        """JSON text in UTF-8 (compact separators, keys in insertion order)."""
        return Serde("json()",
                     lambda obj: _json.dumps(obj, separators=(",", ":")).encode("utf-8"),
                     lambda data: _json.loads(bytes(data).decode("utf-8")))

    @staticmethod
    def avro(schema: Any) -> Serde:
        """Avro binary without a header (fastavro's schemaless encoding)."""
        import fastavro

        parsed = fastavro.parse_schema(_json.loads(schema) if isinstance(schema, str) else schema)

        def encode(obj: Any) -> bytes:
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, parsed, obj)
            return buf.getvalue()

        def decode(data: bytes) -> Any:
            buf = io.BytesIO(data)
            obj = fastavro.schemaless_reader(buf, parsed, None)
            if buf.tell() != len(data):
                raise ValueError(f"{len(data) - buf.tell()} trailing bytes after the record")
            return obj

        return Serde(f"avro({parsed.get('name', parsed.get('type'))})", encode, decode)

    # The windowed serdes live in streamlib.windows, which sits below this module in the
    # layers (DESIGN.md) and imports it: importing them here at module import would invert
    # the layering and make a cycle, so the two factories import them when called.
    @staticmethod
    def time_windowed(inner: Serde, window_size: Any) -> Serde:
        """``Windowed`` keys of time windows in Kafka's ``TimeWindowedSerde`` format:
        ``inner`` key bytes + 8-byte big-endian window start (end = start + ``window_size``)."""
        from .windows.serdes import TimeWindowedSerde
        return TimeWindowedSerde(inner, window_size)

    @staticmethod
    def session_windowed(inner: Serde) -> Serde:
        """``Windowed`` keys of session windows in Kafka's ``SessionWindowedSerde`` format:
        ``inner`` key bytes + 8-byte end + 8-byte start (big-endian)."""
        from .windows.serdes import SessionWindowedSerde
        return SessionWindowedSerde(inner)


SERDES_BY_NAME: dict[str, Callable[[], Serde]] = {
    "string": Serdes.string, "long": Serdes.long, "integer": Serdes.integer,
    "double": Serdes.double, "bytes": Serdes.bytes, "json": Serdes.json,
}


def serde_by_name(name: str) -> Serde:
    """The built-in serde called ``name`` (``string``, ``long``, ...), for the CLI."""
    try:
        return SERDES_BY_NAME[name]()
    except KeyError:
        raise ValueError(f"unknown serde {name!r}; choose one of {', '.join(SERDES_BY_NAME)}") from None

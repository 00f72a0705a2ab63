"""Serdes: turning keys and values into bytes and back.

Each :class:`Serde` is a pair of plain functions so the runtime can call them in
tight loops; ``None`` always maps to ``None`` (Kafka's tombstone convention).
"""
from __future__ import annotations

import io
import json as _json
import math
import struct
from typing import Any, Callable, Optional, Union

import numpy as np
import pyarrow as pa

from .time import Duration, to_millis
from .windowed import MAX_TIMESTAMP, Window, Windowed

#: A column of payloads: a binary (or large binary) Arrow array, chunked or not.
Column = Union[pa.Array, pa.ChunkedArray]


class SerializationError(ValueError):
    """A payload could not be (de)serialized by a serde."""


def _preview(data: bytes, limit: int = 16) -> str:
    head = data[:limit].hex(" ")
    return head + (" ..." if len(data) > limit else "")


class Serde:
    """A named pair of ``serialize(obj) -> bytes`` and ``deserialize(bytes) -> obj``.

    ``deserialize_column``/``serialize_column`` optionally do the same over a whole
    Arrow column at once; they may raise on anything unusual (a bad payload, an object
    of another type), and the serde then redoes the column value by value, so results
    and errors are always exactly those of the per-value functions.

    ``check_batch(array)`` (built-in serdes only): whether every value of a binary Arrow
    array deserializes and serializes back to the same bytes, so a batch path may use
    the bytes as they are (None: unknown, records are decoded one by one).
    """

    check_batch: Optional[Callable[[Any], bool]] = None

    def __init__(self, name: str, serialize: Callable[[Any], bytes],
                 deserialize: Callable[[bytes], Any],
                 deserialize_column: Optional[Callable[[Column], list]] = None,
                 serialize_column: Optional[Callable[[list], pa.Array]] = None,
                 check_batch: Optional[Callable[[Any], bool]] = None):
        self.name = name
        self._serialize = serialize
        self._deserialize = deserialize
        self._deserialize_column = deserialize_column
        self._serialize_column = serialize_column
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

    def deserialize_column(self, data: Column) -> list:
        """:meth:`deserialize` of every payload of a binary Arrow column (nulls are
        ``None``), as a list; the first bad payload raises what :meth:`deserialize` does.

        >>> Serdes.string().deserialize_column(pa.array([b"a", None], pa.binary()))
        ['a', None]
        """
        if self._deserialize_column is not None:
            try:
                return self._deserialize_column(data)
            except Exception:  # noqa: BLE001 - the per-value path raises the precise error
                pass
        deserialize = self.deserialize
        return [deserialize(v) for v in payloads(data)]

    def serialize_column(self, objs: list) -> pa.Array:
        """:meth:`serialize` of every object, as a binary Arrow array (``None`` is null);
        the first object that cannot be serialized raises what :meth:`serialize` does.

        >>> Serdes.long().serialize_column([1, None]).to_pylist()
        [b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x01', None]
        """
        if self._serialize_column is not None:
            try:
                return self._serialize_column(objs)
            except Exception:  # noqa: BLE001 - the per-value path raises the precise error
                pass
        serialize = self.serialize
        return pa.array([serialize(obj) for obj in objs], pa.binary())

    def __repr__(self) -> str:
        return f"Serdes.{self.name}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Serde) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)


def payloads(data: Column) -> list:
    """The values of a binary Arrow column as a list of ``bytes``/``None``
    (through NumPy: several times faster than ``to_pylist``)."""
    return data.to_numpy(zero_copy_only=False).tolist()


def _strings_column(data: Column) -> list:
    # Arrow's cast validates UTF-8 as strictly as bytes.decode (no surrogates, no
    # overlong forms) and raises on the first bad payload.
    return data.cast(pa.string()).to_numpy(zero_copy_only=False).tolist()


def _strings_payloads(objs: list) -> pa.Array:
    if not set(map(type, objs)) <= {str, type(None)}:
        raise TypeError("not all str")  # bytes, str subclasses...: value by value
    return pa.array(objs, pa.string()).cast(pa.binary())


def _fixed_column(dtype: str, size: int) -> tuple[Callable, Callable]:
    """Column codecs of a fixed-width big-endian number (NumPy ``dtype`` like ``>i8``)."""
    native = np.dtype(dtype).newbyteorder("=")
    python_type = float if native.kind == "f" else int

    def decode(data: Column) -> list:
        array = data.combine_chunks() if isinstance(data, pa.ChunkedArray) else data
        fixed = array.cast(pa.binary(size))  # raises unless every payload has `size` bytes
        numbers = np.frombuffer(fixed.buffers()[1], dtype=dtype, count=len(fixed) + fixed.offset)
        out = numbers[fixed.offset:].astype(native).tolist()
        if fixed.null_count:
            for i in np.flatnonzero(fixed.is_null().to_numpy(zero_copy_only=False)).tolist():
                out[i] = None
        return out

    def encode(objs: list) -> pa.Array:
        kinds = set(map(type, objs))
        if not kinds <= {python_type, type(None)}:
            raise TypeError("mixed types")  # bool, numpy scalars, ...: value by value
        valid = pa.array(objs, pa.from_numpy_dtype(native))  # raises on overflow
        raw = valid.fill_null(0).to_numpy().astype(dtype)
        if native.kind == "f":
            raw[np.isnan(raw)] = np.nan   # one NaN, as Java's doubleToLongBits writes it
        fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(size), len(objs),
                                                     [valid.buffers()[0], pa.py_buffer(raw.tobytes())])
        return fixed.cast(pa.binary())

    return decode, encode


def _fixed(fmt: str, size: int, kind: str) -> tuple[Callable, Callable]:
    # Closures over the format string (not a struct.Struct) so serdes pickle to executors.
    def encode(obj: Any) -> bytes:
        return struct.pack(fmt, obj)

    def encode_float(obj: Any) -> bytes:
        if obj != obj:   # NaN: one bit pattern, as Java's doubleToLongBits writes it
            return struct.pack(fmt, math.nan)
        return struct.pack(fmt, obj)

    def decode(data: bytes) -> Any:
        if len(data) != size:
            raise ValueError(f"{kind} needs exactly {size} bytes, got {len(data)}")
        return struct.unpack(fmt, data)[0]

    return (encode_float if kind == "double" else encode), decode


def _all_utf8(array: Any) -> bool:
    """Every value is valid UTF-8 (Arrow's check rejects what Python's decode rejects:
    surrogates, overlong forms, truncated sequences)."""
    import pyarrow as pa

    try:
        array.cast(pa.string())
    except pa.ArrowInvalid:
        return False
    return True


#: ``json.dumps(obj, separators=(",", ":"))`` without making an encoder per call
_JSON_ENCODER = _json.JSONEncoder(separators=(",", ":"))
#: the default decoder's C scanner: one JSON value at an index of a string
_JSON_SCAN = _json.JSONDecoder().scan_once


def _encode_json(obj: Any) -> bytes:
    return _JSON_ENCODER.encode(obj).encode("utf-8")


def _decode_json(data: bytes) -> Any:
    return _json.loads(bytes(data).decode("utf-8"))


def _decode_json_column(data: Column) -> list:
    """:func:`_decode_json` of every payload, for payloads that are exactly one JSON
    value with no whitespace around it (as :func:`_encode_json` writes them): the
    scanner ``json.loads`` runs, without its per-call checks. Anything else raises
    (``StopIteration`` from the scanner, or ``ValueError``) and the serde decodes the
    column value by value."""
    scan, out = _JSON_SCAN, []
    append = out.append
    for data in payloads(data):
        if data is None:
            append(None)
            continue
        text = data.decode("utf-8")
        obj, end = scan(text, 0)
        if end != len(text):
            raise ValueError("not one JSON value")
        append(obj)
    return out


def _all_json(array: Any) -> bool:
    """Every value is JSON that :func:`_encode_json` writes back byte for byte (compact,
    as ``Serdes.json()`` writes it); anything else (spaces, other escapes or number forms,
    bad UTF-8, not JSON, and ``null``, which deserializes to a null value where the bytes are
    not null) answers False and the records go one by one."""
    try:
        for data in array.to_pylist():
            if data is not None:
                obj = _decode_json(data)
                if obj is None or _encode_json(obj) != data:
                    return False
    except Exception:
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


# Windowed keys in Kafka's wire format, so Java consumers read our windowed output:
# time windowed = inner key bytes + 8-byte big-endian window start (the end is
# ``start + window_size``, capped at ``2**63 - 1``); session windowed = inner key bytes +
# 8-byte end + 8-byte start. Made by ``Serdes.time_windowed`` and ``Serdes.session_windowed``.

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


class Serdes:
    """Factory of the built-in serdes (names as in Kafka's ``Serdes``)."""

    @staticmethod
    def string() -> Serde:
        """UTF-8 text."""
        return Serde("string()", _encode_str, _decode_utf8, _strings_column, _strings_payloads,
                     check_batch=_all_utf8)

    @staticmethod
    def long() -> Serde:
        """64-bit signed big-endian integer (Kafka's ``LongSerializer``)."""
        return Serde("long()", *_fixed(">q", 8, "long"), *_fixed_column(">i8", 8), check_batch=_all_sized(8))

    @staticmethod
    def integer() -> Serde:
        """32-bit signed big-endian integer (Kafka's ``IntegerSerializer``)."""
        return Serde("integer()", *_fixed(">i", 4, "integer"), *_fixed_column(">i4", 4),
                     check_batch=_all_sized(4))

    @staticmethod
    def double() -> Serde:
        """IEEE 754 big-endian double (Kafka's ``DoubleSerializer``)."""
        return Serde("double()", *_fixed(">d", 8, "double"), *_fixed_column(">f8", 8))

    @staticmethod
    def bytes() -> Serde:
        """Raw bytes, unchanged."""
        return Serde("bytes()", _encode_bytes, bytes, payloads, check_batch=_any_bytes)

    @staticmethod
    def json() -> Serde:
        """JSON text in UTF-8 (compact separators, keys in insertion order)."""
        return Serde("json()", _encode_json, _decode_json, _decode_json_column, check_batch=_all_json)

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

    @staticmethod
    def time_windowed(inner: Serde, window_size: Any) -> Serde:
        """``Windowed`` keys of time windows in Kafka's ``TimeWindowedSerde`` format:
        ``inner`` key bytes + 8-byte big-endian window start (end = start + ``window_size``)."""
        return TimeWindowedSerde(inner, window_size)

    @staticmethod
    def session_windowed(inner: Serde) -> Serde:
        """``Windowed`` keys of session windows in Kafka's ``SessionWindowedSerde`` format:
        ``inner`` key bytes + 8-byte end + 8-byte start (big-endian)."""
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

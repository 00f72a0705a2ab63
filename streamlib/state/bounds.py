"""Key-range arithmetic shared by every readable store.

RocksDB iterates from an inclusive lower key to an *exclusive* upper bound; the store API
speaks in inclusive ranges and prefixes. These helpers translate once, in one place.
"""
from __future__ import annotations

from typing import Optional

Bounds = tuple[Optional[bytes], Optional[bytes]]


def range_bounds(lo: Optional[bytes], hi: Optional[bytes]) -> Bounds:
    """``lo <= key <= hi`` (``None`` = open) as ``(lower, exclusive upper)``."""
    return lo, None if hi is None else bytes(hi) + b"\x00"


def prefix_bounds(prefix: bytes) -> Bounds:
    """Keys starting with ``prefix`` as ``(lower, exclusive upper)``."""
    stem = bytes(prefix).rstrip(b"\xff")
    upper = stem[:-1] + bytes([stem[-1] + 1]) if stem else None
    return bytes(prefix), upper


def within(key: bytes, bounds: Bounds) -> bool:
    lower, upper = bounds
    return (lower is None or key >= lower) and (upper is None or key < upper)

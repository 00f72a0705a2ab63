"""Arrow → Python conversions on the restore path.

``to_numpy(zero_copy_only=False)`` builds the ``bytes`` objects ~15x faster than
``to_pylist()`` (measured: 13 ms vs 236 ms for 200k keys).
"""
from __future__ import annotations

from typing import Optional

import pyarrow as pa


def binaries(column: pa.Array | pa.ChunkedArray) -> list[Optional[bytes]]:
    """A binary column as a list of ``bytes`` (``None`` for nulls)."""
    return column.to_numpy(zero_copy_only=False).tolist()

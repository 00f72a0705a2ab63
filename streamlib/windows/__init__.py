"""Window definitions: which windows a record belongs to, their bounds, grace and retention.

Pure Python (and numpy for vectorised assignment); the window aggregation processors,
the window/session stores and the DSL all build on these.
"""
from .definitions import EmitStrategy, JoinWindows, SessionWindows, SlidingWindows
from .time_windows import TimeWindows
from ..windowed import MAX_TIMESTAMP, Window, Windowed

__all__ = ["Window", "Windowed", "TimeWindows", "SlidingWindows", "SessionWindows", "JoinWindows",
           "EmitStrategy", "MAX_TIMESTAMP"]

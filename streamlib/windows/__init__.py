"""Placeholder ``Window``/``Windowed`` for the stores branch (the real package replaces it)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, order=True)
class Window:
    start: int
    end: int


@dataclass(frozen=True)
class Windowed:
    key: Any
    window: Window


__all__ = ["Window", "Windowed"]

"""A store used as raw bytes by its processor (foreign-key join subscriptions)."""
from __future__ import annotations

from typing import Any


class RawStore:
    """The task's byte store as is: ``store.put/get/prefix_scan`` on bytes; writes go
    straight into the byte store's batch buffer, so nothing is held back here."""

    def __init__(self, name: str, store: Any):
        self.name = name
        self.store = store

    def write_back(self) -> None:
        """Nothing to hand over: the byte store already has every write."""

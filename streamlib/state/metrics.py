"""Per-store counters (Kafka Streams' metered layer, as plain numbers)."""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class StoreMetrics:
    gets: int = 0
    puts: int = 0
    open_seconds: float = 0.0          # includes waiting for a previous holder's lock
    commits: int = 0
    committed_keys: int = 0
    commit_seconds: float = 0.0
    changelog_appends_skipped: int = 0  # duplicates of an already appended batch
    undone_batches: int = 0
    dropped_copies: int = 0            # local copies discarded (ahead of the batch, or stale)
    restored_records: int = 0
    restore_seconds: float = 0.0

    def as_dict(self) -> dict:
        return asdict(self)

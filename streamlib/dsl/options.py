"""Option objects of the DSL (Kafka Streams' ``Consumed``, ``Produced``, ...).

Each is a small frozen value; ``None`` fields fall back to the application's
default serdes or to a generated name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, Callable, Mapping, Optional

from ..serdes import Serde
from ..topology import TopologyError
from ..time import Duration, to_millis


@dataclass(frozen=True)
class Consumed:
    """How a source topic is read: serdes and an optional timestamp extractor."""

    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None
    timestamp_extractor: Optional[Callable[[Any, Any, int], int]] = None
    name: Optional[str] = None

    @staticmethod
    def with_(key_serde: Optional[Serde] = None, value_serde: Optional[Serde] = None,
              timestamp_extractor: Optional[Callable] = None) -> "Consumed":
        return Consumed(key_serde, value_serde, timestamp_extractor)

    @staticmethod
    def as_(name: str) -> "Consumed":
        return Consumed(name=name)


@dataclass(frozen=True)
class Produced:
    """How records are written to a topic: serdes and an optional partitioner
    ``fn(key, value, num_partitions) -> int``."""

    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None
    partitioner: Optional[Callable[[Any, Any, int], int]] = None
    name: Optional[str] = None

    @staticmethod
    def with_(key_serde: Optional[Serde] = None, value_serde: Optional[Serde] = None,
              partitioner: Optional[Callable] = None) -> "Produced":
        return Produced(key_serde, value_serde, partitioner)


@dataclass(frozen=True)
class Grouped:
    """Serdes (and name of the repartition step) for ``group_by``/``group_by_key``."""

    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None
    name: Optional[str] = None

    @staticmethod
    def with_(key_serde: Optional[Serde] = None, value_serde: Optional[Serde] = None,
              name: Optional[str] = None) -> "Grouped":
        return Grouped(key_serde, value_serde, name)

    @staticmethod
    def as_(name: str) -> "Grouped":
        return Grouped(name=name)


@dataclass(frozen=True)
class Repartitioned:
    """Explicit repartitioning: serdes, name and number of partitions."""

    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None
    name: Optional[str] = None
    num_partitions: Optional[int] = None

    @staticmethod
    def with_(key_serde: Optional[Serde] = None, value_serde: Optional[Serde] = None,
              name: Optional[str] = None, num_partitions: Optional[int] = None) -> "Repartitioned":
        return Repartitioned(key_serde, value_serde, name, num_partitions)

    @staticmethod
    def as_(name: str) -> "Repartitioned":
        return Repartitioned(name=name)

    def with_num_partitions(self, n: int) -> "Repartitioned":
        return replace(self, num_partitions=n)


_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")


@dataclass(frozen=True)
class Materialized:
    """Name (queryable) and serdes of the store behind a KTable."""

    store_name: Optional[str] = None
    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None
    logging: bool = True
    caching: bool = True
    #: how long a window store keeps windows (at least the windows' size + grace)
    retention_ms: int = 0
    #: configs of the changelog topic, as sorted ``(name, value)`` pairs (hashable)
    logging_config: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        # Kafka's rule for names (its changelog topic is named after the store)
        name = self.store_name
        if name is not None and not (0 < len(name) <= 249 and _LEGAL_NAME.fullmatch(name)):
            raise TopologyError(f"store name {name!r} is illegal: use 1-249 characters of "
                                "ASCII letters, digits, '.', '_' and '-'")

    @staticmethod
    def as_(store_name: str) -> "Materialized":
        return Materialized(store_name)

    @staticmethod
    def with_(key_serde: Optional[Serde] = None, value_serde: Optional[Serde] = None) -> "Materialized":
        return Materialized(None, key_serde, value_serde)

    def with_key_serde(self, serde: Serde) -> "Materialized":
        return replace(self, key_serde=serde)

    def with_value_serde(self, serde: Serde) -> "Materialized":
        return replace(self, value_serde=serde)

    def with_logging_enabled(self, configs: Optional[Mapping[str, object]] = None) -> "Materialized":
        """Log the store to its changelog topic, created with ``configs`` on top of
        streamlib's (``cleanup.policy=compact``), e.g. ``{"max.message.bytes": "8388608"}``;
        ``start()`` fails if the topic exists with other values for them.

        >>> Materialized.as_("s").with_logging_enabled({"max.message.bytes": 2 ** 23}).logging_config
        (('max.message.bytes', '8388608'),)
        """
        pairs = tuple(sorted((str(k), str(v)) for k, v in (configs or {}).items()))
        return replace(self, logging=True, logging_config=pairs)

    def with_logging_disabled(self) -> "Materialized":
        return replace(self, logging=False, logging_config=())

    def with_caching_disabled(self) -> "Materialized":
        return replace(self, caching=False)

    def with_retention(self, retention: Duration) -> "Materialized":
        """Keep windows this long (window and session stores)."""
        return replace(self, retention_ms=to_millis(retention, "retention"))


@dataclass(frozen=True)
class Joined:
    """Serdes and grace of a stream-table join (``grace=0``: the classic join)."""

    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None
    other_value_serde: Optional[Serde] = None
    grace: Duration = timedelta(0)
    name: Optional[str] = None

    @staticmethod
    def with_(key_serde: Optional[Serde] = None, value_serde: Optional[Serde] = None,
              other_value_serde: Optional[Serde] = None, grace: Duration = timedelta(0), *,
              name: Optional[str] = None) -> "Joined":
        """Serdes for the repartition a re-keyed stream needs, the grace, and a name for
        the join step (and its repartition topic ``<name>-repartition``)."""
        return Joined(key_serde, value_serde, other_value_serde, grace, name)

    @property
    def grace_ms(self) -> int:
        return to_millis(self.grace, "grace")


@dataclass(frozen=True)
class Suppressed:
    """What a ``KTable.suppress`` holds back; only ``until_window_closes`` for now."""

    kind: str = "until_window_closes"

    @staticmethod
    def until_window_closes() -> "Suppressed":
        return Suppressed("until_window_closes")

    @staticmethod
    def emit_final() -> "Suppressed":
        return Suppressed("until_window_closes")

"""Option objects of the DSL (Kafka Streams' ``Consumed``, ``Produced``, ...).

Each is a small frozen value; ``None`` fields fall back to the application's
default serdes or to a generated name.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, Callable, ClassVar, Mapping, Optional

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
    #: a versioned table (``as_versioned``): how long it keeps older versions
    history_retention_ms: Optional[int] = None
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
    def as_versioned(store_name: str, history_retention: Duration) -> "Materialized":
        """A versioned table (Kafka's ``Materialized.as(Stores.persistentVersionedKeyValueStore(
        name, historyRetention))``) for ``builder.table``: the store queried under
        ``store_name`` holds the latest values, and a stream–table join with a grace
        period looks records up as of their timestamps in ``history_retention`` of the
        table's history (at least the grace; without ``as_versioned`` the join keeps
        exactly its grace). Updates older than the history are dropped.

        Examples
        --------
        >>> from datetime import timedelta
        >>> Materialized.as_versioned("customers", timedelta(hours=2)).history_retention_ms
        7200000
        """
        history = to_millis(history_retention, "history_retention")
        if history <= 0:
            raise TopologyError(f"Materialized.as_versioned({store_name!r}): history_retention must be "
                                f"positive, got {history_retention!r}")
        return Materialized(store_name, history_retention_ms=history)

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
class BufferConfig:
    """How much a ``suppress`` buffer may hold, and what happens when it is full
    (Kafka's ``Suppressed.BufferConfig``): ``unbounded()``, or at most ``max_records(n)``
    records and/or ``max_bytes(b)`` bytes (a record's serialized key, value, headers and
    two timestamps), then ``emit_early_when_full()`` (the oldest records leave early,
    the default with a bound) or ``shut_down_when_full()`` (the task fails).

    Examples
    --------
    >>> BufferConfig.max_records(1000).with_max_bytes(1 << 20).shut_down_when_full()
    BufferConfig(record_limit=1000, byte_limit=1048576, when_full='shut_down')
    """

    record_limit: Optional[int] = None
    byte_limit: Optional[int] = None
    #: "emit_early" or "shut_down"
    when_full: str = "shut_down"

    def __post_init__(self) -> None:
        for what, limit in (("max_records", self.record_limit), ("max_bytes", self.byte_limit)):
            if limit is not None and (not isinstance(limit, int) or limit < 0):
                raise TopologyError(f"Suppressed.BufferConfig.{what} must be a non-negative int, got {limit!r}")

    @staticmethod
    def unbounded() -> "BufferConfig":
        return BufferConfig()

    @staticmethod
    def max_records(n: int) -> "BufferConfig":
        return BufferConfig(record_limit=n, when_full="emit_early")

    @staticmethod
    def max_bytes(b: int) -> "BufferConfig":
        return BufferConfig(byte_limit=b, when_full="emit_early")

    def with_max_records(self, n: int) -> "BufferConfig":
        return replace(self, record_limit=n)

    def with_max_bytes(self, b: int) -> "BufferConfig":
        return replace(self, byte_limit=b)

    def with_no_bound(self) -> "BufferConfig":
        return BufferConfig()

    def emit_early_when_full(self) -> "BufferConfig":
        return replace(self, when_full="emit_early")

    def shut_down_when_full(self) -> "BufferConfig":
        return replace(self, when_full="shut_down")

    @property
    def bounded(self) -> bool:
        return self.record_limit is not None or self.byte_limit is not None


@dataclass(frozen=True)
class Suppressed:
    """What a ``KTable.suppress`` holds back: final results of windows
    (``until_window_closes``), or each key's updates for a time (``until_time_limit``),
    in a buffer of the given :class:`BufferConfig`."""

    kind: str = "until_window_closes"
    buffer_config: BufferConfig = BufferConfig()
    time_limit_ms: int = 0
    name: Optional[str] = None

    BufferConfig: ClassVar[type] = BufferConfig

    @staticmethod
    def until_window_closes(buffer_config: Optional[BufferConfig] = None) -> "Suppressed":
        """One final result per window. The buffer may not emit early (Kafka takes only a
        ``StrictBufferConfig`` here): bound it with ``shut_down_when_full()``."""
        config = buffer_config or BufferConfig.unbounded()
        if config.bounded and config.when_full != "shut_down":
            raise TopologyError("Suppressed.until_window_closes(): a buffer that emits early would emit "
                                "results that are not final; add .shut_down_when_full()")
        return Suppressed("until_window_closes", config)

    @staticmethod
    def emit_final() -> "Suppressed":
        return Suppressed("until_window_closes")

    @staticmethod
    def until_time_limit(time_to_wait_for_more_events: Duration,
                         buffer_config: Optional[BufferConfig] = None) -> "Suppressed":
        """Hold each key's updates until stream time passes the time of its first held
        update plus ``time_to_wait_for_more_events``, then forward its latest (Kafka's
        ``untilTimeLimit``); works on any table.

        Examples
        --------
        >>> Suppressed.until_time_limit(5_000, Suppressed.BufferConfig.max_records(100)).time_limit_ms
        5000
        """
        wait = to_millis(time_to_wait_for_more_events, "time_to_wait_for_more_events")
        if wait < 0:
            raise TopologyError(f"Suppressed.until_time_limit(): the time to wait must not be negative, got {wait} ms")
        return Suppressed("until_time_limit", buffer_config or BufferConfig.unbounded(), wait)

    def with_name(self, name: str) -> "Suppressed":
        return replace(self, name=name)

"""``Stores``: state stores for user processors (Kafka Streams' ``Stores`` factory).

A supplier names a store and its kind (``persistent_key_value_store("seen")``, window,
session, versioned); a builder adds its serdes and options
(``key_value_store_builder(supplier, key_serde, value_serde).with_logging_enabled({...})``);
``StreamsBuilder.add_state_store(builder)`` adds it to the topology and
``KStream.process(supplier, "seen")`` connects it to a processor.

Every store lives in RocksDB (one copy per task, rebuilt from its changelog topic when
lost), whatever its supplier: the ``in_memory_*`` suppliers exist so code written for
Kafka Streams keeps working, and give the same store as the persistent ones. Like
Kafka's builders, logging is on and caching off by default; streamlib's stores write
once per commit either way, so caching changes nothing a processor sees.

Examples
--------
>>> from streamlib import Serdes, Stores, StreamsBuilder
>>> builder = StreamsBuilder()
>>> builder.add_state_store(Stores.key_value_store_builder(
...     Stores.persistent_key_value_store("seen"), Serdes.string(), Serdes.long()))
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Optional

from .dsl.options import Materialized
from .serdes import Serde
from .state.kinds import StoreKind
from .time import Duration, to_millis
from .topology import StoreDef, TopologyError

@dataclass(frozen=True)
class StoreSupplier:
    """A store's name, kind and retention (Kafka's ``*BytesStoreSupplier``)."""

    name: str
    kind: StoreKind
    persistent: bool = True
    #: window and session stores: how long behind stream time windows/sessions are kept;
    #: versioned stores: how long history is kept
    retention_ms: int = 0
    window_size_ms: int = 0

    def __post_init__(self) -> None:
        Materialized(self.name)   # Kafka's rule for store names (they name changelog topics)


@dataclass(frozen=True)
class StoreBuilder:
    """A supplier with serdes, logging and caching (Kafka's ``StoreBuilder``)."""

    supplier: StoreSupplier
    key_serde: Optional[Serde] = None
    value_serde: Optional[Serde] = None
    logging: bool = True
    #: topic configs of the changelog topic, e.g. ``{"min.insync.replicas": "2"}``
    changelog_config: tuple[tuple[str, str], ...] = ()
    caching: bool = False

    @property
    def name(self) -> str:
        return self.supplier.name

    def with_logging_enabled(self, config: Optional[Mapping[str, Any]] = None) -> "StoreBuilder":
        """Change-log the store (the default) to a topic created with ``config``."""
        items = tuple(sorted((str(k), str(v)) for k, v in (config or {}).items()))
        return replace(self, logging=True, changelog_config=items)

    def with_logging_disabled(self) -> "StoreBuilder":
        """No changelog: the store is not restored when its local copy is lost."""
        return replace(self, logging=False, changelog_config=())

    def with_caching_enabled(self) -> "StoreBuilder":
        return replace(self, caching=True)

    def with_caching_disabled(self) -> "StoreBuilder":
        return replace(self, caching=False)

    def build(self) -> StoreDef:
        """The topology's definition of the store."""
        s = self.supplier
        return StoreDef(s.name, s.kind, self.key_serde, self.value_serde, logging=self.logging,
                        queryable=True, caching=self.caching, window_size_ms=s.window_size_ms,
                        retention_ms=s.retention_ms, changelog_config=self.changelog_config)


def _builder(supplier: StoreSupplier, kind: StoreKind, key_serde: Optional[Serde],
             value_serde: Optional[Serde]) -> StoreBuilder:
    if not isinstance(supplier, StoreSupplier):
        raise TypeError(f"expected a store supplier from Stores, got {supplier!r}")
    if supplier.kind is not kind:
        raise TopologyError(f"store {supplier.name!r} is a {supplier.kind.label} store; "
                            f"a {kind.label} store builder needs a {kind.label} supplier")
    return StoreBuilder(supplier, key_serde, value_serde)


def _windowed(name: str, kind: StoreKind, persistent: bool, retention: Duration, window_size: Duration = 0,
              retain_duplicates: bool = False) -> StoreSupplier:
    retention_ms = to_millis(retention, "retention_period")
    size_ms = to_millis(window_size, "window_size")
    if retain_duplicates:
        raise TopologyError(f"store {name!r}: window stores that retain duplicates are for joins "
                            "only; give each record its own key or window instead")
    if kind is StoreKind.WINDOW and not 0 < size_ms <= retention_ms:
        raise TopologyError(f"store {name!r}: the window size ({size_ms} ms) must be positive and at "
                            f"most the retention period ({retention_ms} ms)")
    if retention_ms < 1:
        raise TopologyError(f"store {name!r}: the retention period must be positive")
    return StoreSupplier(name, kind, persistent, retention_ms, size_ms)


class Stores:
    """Factory of store suppliers and builders (Kafka Streams' ``Stores``)."""

    # -- key-value ---------------------------------------------------------------------
    @staticmethod
    def persistent_key_value_store(name: str) -> StoreSupplier:
        return StoreSupplier(name, StoreKind.KV)

    @staticmethod
    def persistent_timestamped_key_value_store(name: str) -> StoreSupplier:
        """The same store: streamlib keeps every value with its timestamp."""
        return StoreSupplier(name, StoreKind.KV)

    @staticmethod
    def in_memory_key_value_store(name: str) -> StoreSupplier:
        return StoreSupplier(name, StoreKind.KV, persistent=False)

    @staticmethod
    def key_value_store_builder(supplier: StoreSupplier, key_serde: Optional[Serde] = None,
                                value_serde: Optional[Serde] = None) -> StoreBuilder:
        return _builder(supplier, StoreKind.KV, key_serde, value_serde)

    timestamped_key_value_store_builder = key_value_store_builder

    # -- versioned ---------------------------------------------------------------------
    @staticmethod
    def persistent_versioned_key_value_store(name: str, history_retention: Duration) -> StoreSupplier:
        history_ms = to_millis(history_retention, "history_retention")
        if history_ms < 1:
            raise TopologyError(f"store {name!r}: the history retention must be positive")
        return StoreSupplier(name, StoreKind.VERSIONED, retention_ms=history_ms)

    @staticmethod
    def versioned_key_value_store_builder(supplier: StoreSupplier, key_serde: Optional[Serde] = None,
                                          value_serde: Optional[Serde] = None) -> StoreBuilder:
        return _builder(supplier, StoreKind.VERSIONED, key_serde, value_serde)

    # -- windows -----------------------------------------------------------------------
    @staticmethod
    def persistent_window_store(name: str, retention_period: Duration, window_size: Duration,
                                retain_duplicates: bool = False) -> StoreSupplier:
        return _windowed(name, StoreKind.WINDOW, True, retention_period, window_size, retain_duplicates)

    persistent_timestamped_window_store = persistent_window_store

    @staticmethod
    def in_memory_window_store(name: str, retention_period: Duration, window_size: Duration,
                               retain_duplicates: bool = False) -> StoreSupplier:
        return _windowed(name, StoreKind.WINDOW, False, retention_period, window_size, retain_duplicates)

    @staticmethod
    def window_store_builder(supplier: StoreSupplier, key_serde: Optional[Serde] = None,
                             value_serde: Optional[Serde] = None) -> StoreBuilder:
        return _builder(supplier, StoreKind.WINDOW, key_serde, value_serde)

    timestamped_window_store_builder = window_store_builder

    # -- sessions ----------------------------------------------------------------------
    @staticmethod
    def persistent_session_store(name: str, retention_period: Duration) -> StoreSupplier:
        return _windowed(name, StoreKind.SESSION, True, retention_period)

    @staticmethod
    def in_memory_session_store(name: str, retention_period: Duration) -> StoreSupplier:
        return _windowed(name, StoreKind.SESSION, False, retention_period)

    @staticmethod
    def session_store_builder(supplier: StoreSupplier, key_serde: Optional[Serde] = None,
                              value_serde: Optional[Serde] = None) -> StoreBuilder:
        return _builder(supplier, StoreKind.SESSION, key_serde, value_serde)

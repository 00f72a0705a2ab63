"""Typed stores over the task's byte stores: processor-side stores and query views.

:func:`typed_store` and :func:`query_view` build both for a ``StoreDef`` of any kind
(a :class:`~streamlib.state.kinds.StoreKind`).
"""
from .base import TypedStore
from .keyvalue import KeyValueStoreView, TimestampedKeyValueStore
from .kinds import STORE_KINDS, entries_per_record, query_view, typed_store
from .session import SessionStore, SessionStoreView
from .window import TimestampedWindowStore, WindowStoreView

__all__ = ["KeyValueStoreView", "STORE_KINDS", "entries_per_record", "SessionStore", "SessionStoreView",
           "TimestampedKeyValueStore", "TimestampedWindowStore", "TypedStore", "WindowStoreView",
           "query_view", "typed_store"]

"""The Processor API: user processors inside DSL topologies (Kafka Streams' names).

``KStream.process(supplier, *store_names)`` / ``process_values(...)`` run a
:class:`Processor`; its context (:class:`UserProcessorContext`) forwards records, gives
the connected stores and schedules punctuators (:class:`PunctuationType`); stores come
from :class:`~streamlib.stores.Stores` through ``StreamsBuilder.add_state_store``.
"""
from .processors.api import (FixedKeyProcessor, FixedKeyRecord, Processor, ProcessorSupplier,
                             PunctuationType, RecordMetadata)
from .processors.record import Record
from .processors.user import Cancellable, UserProcessorContext as ProcessorContext
from .processors.user_stores import (KeyValueStore, SessionStore, VersionedKeyValueStore,
                                     VersionedRecord, WindowStore)
from .stores import StoreBuilder, Stores, StoreSupplier

__all__ = ["Cancellable", "FixedKeyProcessor", "FixedKeyRecord", "KeyValueStore", "Processor",
           "ProcessorContext", "ProcessorSupplier", "PunctuationType", "Record", "RecordMetadata",
           "SessionStore", "StoreBuilder", "StoreSupplier", "Stores", "VersionedKeyValueStore",
           "VersionedRecord", "WindowStore"]

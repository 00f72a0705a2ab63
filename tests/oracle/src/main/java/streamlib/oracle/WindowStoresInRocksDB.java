package streamlib.oracle;

import org.apache.kafka.streams.state.BuiltInDslStoreSuppliers;
import org.apache.kafka.streams.state.DslKeyValueParams;
import org.apache.kafka.streams.state.KeyValueBytesStoreSupplier;
import org.apache.kafka.streams.state.Stores;

/**
 * Kafka's default (RocksDB) window and session stores, with in-memory key-value stores.
 * Window and session stores must be RocksDB's, as users get them: Kafka's in-memory ones
 * expire windows differently (a put of an expired window is dropped exactly, not by
 * segment) and emit-final aggregations use a time-ordered RocksDB store. In-memory
 * key-value stores behave as RocksDB's and spare opening a database per store and case.
 */
public final class WindowStoresInRocksDB extends BuiltInDslStoreSuppliers.RocksDBDslStoreSuppliers {

    @Override
    public KeyValueBytesStoreSupplier keyValueStore(final DslKeyValueParams params) {
        return Stores.inMemoryKeyValueStore(params.name());
    }
}

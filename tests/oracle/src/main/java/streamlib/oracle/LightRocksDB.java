package streamlib.oracle;

import java.util.Map;

import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.rocksdb.InfoLogLevel;
import org.rocksdb.Options;

/**
 * RocksDB options for databases that live for one case of a few records: no info log,
 * no statistics dumps, small memtables. Storage tuning only; what a store returns
 * does not depend on it.
 */
public final class LightRocksDB implements RocksDBConfigSetter {

    @Override
    public void setConfig(final String storeName, final Options options, final Map<String, Object> configs) {
        options.setInfoLogLevel(InfoLogLevel.HEADER_LEVEL);
        options.setStatsDumpPeriodSec(0);
        options.setKeepLogFileNum(1);
        options.setWriteBufferSize(64 * 1024);
        options.setMaxBackgroundJobs(1);
        options.setAvoidFlushDuringShutdown(true);
    }

    @Override
    public void close(final String storeName, final Options options) { }
}

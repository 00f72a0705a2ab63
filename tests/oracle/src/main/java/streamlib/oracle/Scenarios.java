package streamlib.oracle;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The named scenario topologies. Each reads String keys and values from topic "in"
 * (joins: also "in2") and writes to topic "out"; tests/oracle_scenarios.py builds the
 * same topologies with streamlib. To add a scenario, add an entry here (windowed ones
 * in WindowScenarios, joins in JoinScenarios) and there.
 */
final class Scenarios {

    /** A topology and how to read its output records. */
    record Scenario(Supplier<Topology> topology, Deserializer<?> outKey, Deserializer<?> outValue) { }

    private Scenarios() { }

    static final Map<String, Scenario> ALL = new LinkedHashMap<>();

    static {
        ALL.put("wordcount", new Scenario(Scenarios::wordcount,
                Serdes.String().deserializer(), Serdes.Long().deserializer()));
        ALL.put("stream-count", new Scenario(Scenarios::streamCount,
                Serdes.String().deserializer(), Serdes.Long().deserializer()));
        ALL.put("stream-reduce", new Scenario(Scenarios::streamReduce,
                Serdes.String().deserializer(), Serdes.String().deserializer()));
        ALL.put("table-aggregate", new Scenario(Scenarios::tableAggregate,
                Serdes.String().deserializer(), Serdes.Long().deserializer()));
        ALL.put("table-reduce", new Scenario(Scenarios::tableReduce,
                Serdes.String().deserializer(), Serdes.String().deserializer()));
        ALL.put("count-filter", new Scenario(Scenarios::countFilter,
                Serdes.String().deserializer(), Serdes.Long().deserializer()));
        ALL.put("table-filters", new Scenario(Scenarios::tableFilters,
                Serdes.String().deserializer(), Serdes.String().deserializer()));
        ALL.put("count-regroup", new Scenario(Scenarios::countRegroup,
                Serdes.String().deserializer(), Serdes.Long().deserializer()));
        WindowScenarios.register(ALL);
        JoinScenarios.register(ALL);
    }

    static Consumed<String, String> strings() {
        return Consumed.with(Serdes.String(), Serdes.String());
    }

    /** Words of each value (split on single spaces), counted. */
    static Topology wordcount() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream("in", strings())
                .flatMapValues(v -> Arrays.asList(v.split(" ")))
                .groupBy((k, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    /** Records per key (null values included, null keys dropped). */
    static Topology streamCount() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream("in", strings())
                .groupByKey()
                .count(Materialized.as("counts"))
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    /** Sum of the integer values per key, as a string. */
    static Topology streamReduce() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream("in", strings())
                .groupByKey()
                .reduce((a, b) -> String.valueOf(Long.parseLong(a) + Long.parseLong(b)),
                        Materialized.as("sums"))
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }

    /** A table re-keyed by its value; per new key: number of rows + total key length. */
    static Topology tableAggregate() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.table("in", strings(), Materialized.as("source"))
                .groupBy((k, v) -> KeyValue.pair(v, k), Grouped.with(Serdes.String(), Serdes.String()))
                .aggregate(() -> 0L,
                        (k, v, agg) -> agg + 1 + v.length(),
                        (k, v, agg) -> agg - 1 - v.length(),
                        Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("agg")
                                .withValueSerde(Serdes.Long()))
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    /** A table re-keyed by the first letter of its value; per new key: the sum of the values' digits. */
    static Topology tableReduce() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.table("in", strings(), Materialized.as("source"))
                .groupBy((k, v) -> KeyValue.pair(v.substring(0, 1), v.substring(1)),
                        Grouped.with(Serdes.String(), Serdes.String()))
                .reduce((a, b) -> String.valueOf(Long.parseLong(a) + Long.parseLong(b)),
                        (a, b) -> String.valueOf(Long.parseLong(a) - Long.parseLong(b)),
                        Materialized.as("sums"))
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }

    /** The even counts per key: a filter below an aggregation (a materialized table). */
    static Topology countFilter() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream("in", strings())
                .groupByKey()
                .count(Materialized.as("counts"))
                .filter((k, n) -> n % 2 == 0)
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    /** A named table's even values above 2, then mapped: filters below a materialized table. */
    static Topology tableFilters() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.table("in", strings(), Materialized.as("source"))
                .filter((k, v) -> Long.parseLong(v) % 2 == 0)
                .mapValues(v -> v + "!")
                .filterNot((k, v) -> v.startsWith("0") || v.startsWith("2"))
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }

    /** Keys counted, then re-grouped by the parity of their count: a table group-by below an aggregation. */
    static Topology countRegroup() {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream("in", strings())
                .groupByKey()
                .count(Materialized.as("counts"))
                .groupBy((k, n) -> KeyValue.pair(n % 2 == 0 ? "even" : "odd", k),
                        Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.as("parity"))
                .toStream()
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }
}

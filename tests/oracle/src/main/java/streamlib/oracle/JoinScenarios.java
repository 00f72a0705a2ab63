package streamlib.oracle;

import java.time.Duration;
import java.util.Map;
import java.util.function.Supplier;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.KeyValueMapper;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.state.Stores;

/**
 * Joins of topic "in" (this side) with topic "in2" (the other side), String values
 * joined as "this+other" ("-" for a missing side): stream–table (classic, and with a
 * grace period over a versioned table), stream–stream (windowed), table–table and
 * foreign-key (the other key is the first letter of this side's value).
 */
final class JoinScenarios {

    private JoinScenarios() { }

    private static final ValueJoiner<String, String, String> JOINER =
            (a, b) -> (a == null ? "-" : a) + "+" + (b == null ? "-" : b);

    private static final Duration GRACE = Duration.ofMillis(5);

    /** The versioned table's history: longer than any case, so no lookup outlives it. */
    private static final Duration HISTORY = Duration.ofMillis(10_000);

    static void register(Map<String, Scenarios.Scenario> all) {
        put(all, "stream-table-join", () -> streamTable(false, false));
        put(all, "stream-table-left-join", () -> streamTable(true, false));
        put(all, "stream-table-join-grace", () -> streamTable(false, true));
        put(all, "stream-table-left-join-grace", () -> streamTable(true, true));
        put(all, "stream-stream-join", () -> streamStream("inner"));
        put(all, "stream-stream-left-join", () -> streamStream("left"));
        put(all, "stream-stream-outer-join", () -> streamStream("outer"));
        put(all, "table-table-join", () -> tableTable("inner"));
        put(all, "table-table-left-join", () -> tableTable("left"));
        put(all, "table-table-outer-join", () -> tableTable("outer"));
        put(all, "fk-join", () -> foreignKey(false));
        put(all, "fk-left-join", () -> foreignKey(true));
        // issue 39: a key selector returning null (KIP-962), duplicate key/side/time in
        // an outer join's buffer, late table records and tombstones in a grace join
        put(all, "global-join", () -> globalTable(false));
        put(all, "global-left-join", () -> globalTable(true));
        put(all, "stream-stream-outer-join-zero", () -> streamStream("outer", Duration.ZERO, Duration.ofMillis(8)));
        put(all, "stream-table-join-grace-late", () -> streamTable(false, true));
        put(all, "stream-table-left-join-grace-late", () -> streamTable(true, true));
    }

    private static void put(Map<String, Scenarios.Scenario> all, String name, Supplier<Topology> topology) {
        all.put(name, new Scenarios.Scenario(topology, Serdes.String().deserializer(),
                Serdes.String().deserializer()));
    }

    private static Produced<String, String> out() {
        return Produced.with(Serdes.String(), Serdes.String());
    }

    /**
     * Classic (grace 0) or, with grace, Kafka's KIP-923 join over a versioned table: stream
     * records are held back for the grace period, then joined with the table as of their
     * timestamp (see tests/oracle_joins.py for how ours, which joins at once and corrects
     * later, is compared).
     */
    static Topology streamTable(boolean left, boolean grace) {
        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, String> table = grace
                ? builder.table("in2", Scenarios.strings(),
                        Materialized.as(Stores.persistentVersionedKeyValueStore("table", HISTORY)))
                : builder.table("in2", Scenarios.strings(), Materialized.as("table"));
        KStream<String, String> stream = builder.stream("in", Scenarios.strings());
        Joined<String, String, String> joined = Joined.with(Serdes.String(), Serdes.String(), Serdes.String());
        if (grace) {
            joined = joined.withGracePeriod(GRACE);
        }
        (left ? stream.leftJoin(table, JOINER, joined) : stream.join(table, JOINER, joined)).to("out", out());
        return builder.build();
    }

    static Topology streamStream(String how) {
        return streamStream(how, Duration.ofMillis(5), Duration.ofMillis(3));
    }

    static Topology streamStream(String how, Duration difference, Duration grace) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> a = builder.stream("in", Scenarios.strings());
        KStream<String, String> b = builder.stream("in2", Scenarios.strings());
        JoinWindows windows = JoinWindows.ofTimeDifferenceAndGrace(difference, grace);
        StreamJoined<String, String, String> joined = StreamJoined.with(Serdes.String(), Serdes.String(),
                Serdes.String());
        KStream<String, String> result = switch (how) {
            case "inner" -> a.join(b, JOINER, windows, joined);
            case "left" -> a.leftJoin(b, JOINER, windows, joined);
            default -> a.outerJoin(b, JOINER, windows, joined);
        };
        result.to("out", out());
        return builder.build();
    }

    /**
     * Stream "in" joined with global table "in2" on the first letter of its value; the
     * key selector returns null for values starting with "d" (and for null values).
     */
    static Topology globalTable(boolean left) {
        StreamsBuilder builder = new StreamsBuilder();
        GlobalKTable<String, String> table = builder.globalTable("in2", Scenarios.strings(),
                Materialized.as("table"));
        KStream<String, String> stream = builder.stream("in", Scenarios.strings());
        KeyValueMapper<String, String, String> selector =
                (k, v) -> v == null || v.startsWith("d") ? null : v.substring(0, 1);
        (left ? stream.leftJoin(table, selector, JOINER) : stream.join(table, selector, JOINER)).to("out", out());
        return builder.build();
    }

    static Topology tableTable(String how) {
        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, String> a = builder.table("in", Scenarios.strings(), Materialized.as("this"));
        KTable<String, String> b = builder.table("in2", Scenarios.strings(), Materialized.as("other"));
        KTable<String, String> result = switch (how) {
            case "inner" -> a.join(b, JOINER);
            case "left" -> a.leftJoin(b, JOINER);
            default -> a.outerJoin(b, JOINER);
        };
        result.toStream().to("out", out());
        return builder.build();
    }

    static Topology foreignKey(boolean left) {
        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, String> a = builder.table("in", Scenarios.strings(), Materialized.as("this"));
        KTable<String, String> b = builder.table("in2", Scenarios.strings(), Materialized.as("other"));
        KTable<String, String> result = left
                ? a.leftJoin(b, v -> v.substring(0, 1), JOINER)
                : a.join(b, v -> v.substring(0, 1), JOINER);
        result.toStream().to("out", out());
        return builder.build();
    }
}

package streamlib.oracle;

import java.time.Duration;
import java.util.Map;
import java.util.function.Function;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;

/**
 * Windowed counts per key of topic "in": tumbling, hopping, sliding and session windows,
 * each emitting every update, through {@code suppress(untilWindowCloses)}, and with
 * {@code EmitStrategy.onWindowClose()}. The output key is "key@start/end" (the
 * window's bounds as Kafka's {@code Windowed} has them), the value the count.
 */
final class WindowScenarios {

    private WindowScenarios() { }

    private static Duration ms(long millis) {
        return Duration.ofMillis(millis);
    }

    /** How a scenario counts: the windows it groups by, and how it emits. */
    private enum Emit { UPDATE, SUPPRESS, FINAL, FILTERED }

    static void register(Map<String, Scenarios.Scenario> all) {
        Map<String, Function<KGroupedStream<String, String>, Function<Emit, KTable<Windowed<String>, Long>>>> kinds =
                new java.util.LinkedHashMap<>();
        kinds.put("tumbling", g -> emit -> {
            var w = g.windowedBy(TimeWindows.ofSizeAndGrace(ms(10), ms(5)));
            return emit == Emit.FINAL ? w.emitStrategy(EmitStrategy.onWindowClose()).count() : w.count();
        });
        kinds.put("hopping", g -> emit -> {
            var w = g.windowedBy(TimeWindows.ofSizeAndGrace(ms(10), ms(4)).advanceBy(ms(3)));
            return emit == Emit.FINAL ? w.emitStrategy(EmitStrategy.onWindowClose()).count() : w.count();
        });
        kinds.put("sliding", g -> emit -> {
            var w = g.windowedBy(SlidingWindows.ofTimeDifferenceAndGrace(ms(5), ms(3)));
            return emit == Emit.FINAL ? w.emitStrategy(EmitStrategy.onWindowClose()).count() : w.count();
        });
        kinds.put("session", g -> emit -> {
            var w = g.windowedBy(SessionWindows.ofInactivityGapAndGrace(ms(5), ms(3)));
            return emit == Emit.FINAL ? w.emitStrategy(EmitStrategy.onWindowClose()).count() : w.count();
        });
        kinds.forEach((kind, counter) -> {
            for (Emit emit : Emit.values()) {
                String name = kind + "-count" + switch (emit) {
                    case UPDATE -> "";
                    case SUPPRESS -> "-suppressed";
                    case FINAL -> "-emit-final";
                    case FILTERED -> "-filtered";
                };
                all.put(name, new Scenarios.Scenario(() -> topology(counter, emit),
                        Serdes.String().deserializer(), Serdes.Long().deserializer()));
            }
        });
    }

    private static Topology topology(
            Function<KGroupedStream<String, String>, Function<Emit, KTable<Windowed<String>, Long>>> counter,
            Emit emit) {
        StreamsBuilder builder = new StreamsBuilder();
        KTable<Windowed<String>, Long> counts = counter.apply(
                builder.stream("in", Scenarios.strings()).groupByKey()).apply(emit);
        if (emit == Emit.SUPPRESS) {
            counts = counts.suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()));
        }
        if (emit == Emit.FILTERED) {   // a filter below a windowed aggregation: its old values
            counts = counts.filter((wk, n) -> n % 2 == 0);
        }
        counts.toStream((wk, v) -> wk.key() + "@" + wk.window().start() + "/" + wk.window().end())
                .to("out", Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }
}

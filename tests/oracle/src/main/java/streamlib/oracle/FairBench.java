package streamlib.oracle;

import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;

/**
 * Kafka Streams for benchmarks/kafka_bench.py's fair comparison:
 * {@code FairBench WORKLOAD BOOTSTRAP INPUT OUTPUT APP_ID STATE_DIR THREADS COMMIT_MS [TABLE]}.
 * Runs until its stdin closes; the benchmark times it from launch until a
 * read_committed reader of OUTPUT has seen every final result, the same way it times
 * streamlib. Default caching; {@code THREADS} stream threads; the commit interval given.
 *
 * <ul>
 *   <li>{@code wordcount}: WordCountDemo (lines to word counts);</li>
 *   <li>{@code windowed}: clicks (user to page) counted per page in 1-minute tumbling
 *       windows without grace, final results only ({@code untilWindowCloses});</li>
 *   <li>{@code join}: orders (customer to order) joined with the customers table TABLE,
 *       {@code max.task.idle.ms} 1 s so that the older table rows are read first.</li>
 * </ul>
 */
public final class FairBench {

    private FairBench() { }

    public static void main(String[] args) throws Exception {
        String workload = args[0], bootstrap = args[1], input = args[2], output = args[3];
        StreamsBuilder builder = new StreamsBuilder();
        switch (workload) {
            case "wordcount":
                builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                        .flatMapValues(v -> Arrays.asList(v.toLowerCase(Locale.ROOT).split("\\W+")))
                        .filter((k, w) -> !w.isEmpty())
                        .groupBy((k, w) -> w, Grouped.with(Serdes.String(), Serdes.String()))
                        .count(Materialized.as("counts"))
                        .toStream()
                        .to(output, Produced.with(Serdes.String(), Serdes.Long()));
                break;
            case "windowed":
                builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                        .groupBy((user, page) -> page, Grouped.with(Serdes.String(), Serdes.String()))
                        .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
                        .count(Materialized.as("minute-counts"))
                        .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
                        .toStream()
                        .map((w, n) -> KeyValue.pair(w.key() + "@" + w.window().start(), n))
                        .to(output, Produced.with(Serdes.String(), Serdes.Long()));
                break;
            case "join":
                KTable<String, String> customers = builder.table(args[8],
                        Consumed.with(Serdes.String(), Serdes.String()), Materialized.as("customers"));
                builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                        .join(customers, (order, customer) -> order + "/" + customer)
                        .to(output, Produced.with(Serdes.String(), Serdes.String()));
                break;
            default:
                throw new IllegalArgumentException("unknown workload " + workload);
        }
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[4]);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, Integer.parseInt(args[6]));
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Long.parseLong(args[7]));
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        if ("join".equals(workload)) {
            props.put(StreamsConfig.MAX_TASK_IDLE_MS_CONFIG, 1000L);
        }
        CountDownLatch stopped = new CountDownLatch(1);
        try (KafkaStreams streams = new KafkaStreams(builder.build(), props)) {
            streams.setUncaughtExceptionHandler(error -> {
                error.printStackTrace();
                stopped.countDown();
                return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                        .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
            });
            streams.start();
            System.out.println("started");
            System.out.flush();
            Thread reader = new Thread(() -> {
                try {
                    while (System.in.read() != -1) {
                        // the benchmark closes stdin when it has seen every result
                    }
                } catch (java.io.IOException ignored) {
                    // closed
                }
                stopped.countDown();
            });
            reader.setDaemon(true);
            reader.start();
            stopped.await();
        }
    }
}

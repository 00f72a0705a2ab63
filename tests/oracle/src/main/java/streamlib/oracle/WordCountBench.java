package streamlib.oracle;

import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Kafka Streams' WordCountDemo on a real broker, for benchmarks/kafka_bench.py:
 * {@code WordCountBench BOOTSTRAP INPUT OUTPUT APP_ID LINES STATE_DIR}. Prints
 * "seconds=S words=W": the time from start() until all LINES input records were
 * processed and committed (default caching and commit interval), and the words counted.
 */
public final class WordCountBench {

    private WordCountBench() { }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], input = args[1], output = args[2], appId = args[3];
        long lines = Long.parseLong(args[4]);
        AtomicLong seen = new AtomicLong();
        AtomicLong words = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .peek((k, v) -> {
                    if (seen.incrementAndGet() == lines) {
                        done.countDown();
                    }
                })
                .flatMapValues(v -> Arrays.asList(v.toLowerCase(Locale.ROOT).split("\\W+")))
                .filter((k, w) -> !w.isEmpty())
                .peek((k, w) -> words.incrementAndGet())
                .groupBy((k, w) -> w, Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        try (KafkaStreams streams = new KafkaStreams(builder.build(), props)) {
            long start = System.nanoTime();
            streams.start();
            if (!done.await(900, TimeUnit.SECONDS)) {
                throw new IllegalStateException("timed out after " + seen.get() + " of " + lines + " lines");
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            System.out.printf(Locale.ROOT, "seconds=%.3f words=%d%n", seconds, words.get());
        }
    }
}

package streamlib.oracle;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.errors.InvalidStateStoreException;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * One case of the parity test (tests/spark/test_parity_topologies.py) through a real
 * KafkaStreams application on a broker, record caching on or off, so that Spark's
 * per-batch commit can be compared with Kafka Streams' own commits.
 *
 * <p>{@code CachedRuns BOOTSTRAP CACHE_BYTES COMMIT_MS}; stdin: one JSON object
 * {"topology": name, "runs": [[{"topic", "partition", "key", "value", "timestamp"}, ...], ...]}
 * (a run may also be {"records": [...], "inputs_only": true}: closed once its records are
 * processed, see waitUntilProcessed);
 * BOOTSTRAP {@code test-driver}: TopologyTestDriver instead, caching off, the records piped
 * in the order given. Both answers also give "dropped": the tasks' dropped-records-total.
 * Each run's records are produced first; then one KafkaStreams instance (one thread,
 * the same application id and state directory for every run) processes them until its
 * group has read everything (no lag on any source topic, input or repartition, after a
 * commit) and is closed. The commit interval is long against a run's few records, so a
 * sub-topology's record cache is flushed once per round over what it has read: one
 * commit covers a run, as a Spark batch does. stdout: {"outputs": [[key, value,
 * timestamp], ...] of out0 in order, "store": {key: value} of store0}.
 */
public final class CachedRuns {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final ValueJoiner<String, String, String> JOINER = (a, b) -> a + "|" + b;

    private CachedRuns() { }

    /** tests/parity_topologies.py's table ``map_values``: a value's next key (a -> b -> c -> a). */
    private static String nextKey(String value) {
        if (value == null || value.isEmpty() || "abc".indexOf(value.charAt(0)) < 0) {
            return value;
        }
        return String.valueOf("abc".charAt(("abc".indexOf(value.charAt(0)) + 1) % 3));
    }

    /** The topologies of tests/parity_topologies.py in the cases docs/semantics.md lists as deliberate differences. */
    static Topology topology(String name, String p) {
        StreamsBuilder builder = new StreamsBuilder();
        Materialized<String, String, KeyValueStore<Bytes, byte[]>> store = Materialized.as("store0");
        KTable<String, String> joined;
        switch (name) {
            case "t1.join(t2)":
                joined = builder.<String, String>table(p + "t1").join(builder.table(p + "t2"), JOINER, store);
                break;
            case "t2.join(t2.filter.filter, fk)": {
                KTable<String, String> t2 = builder.table(p + "t2");
                KTable<String, String> right = t2.filter((k, v) -> !"b".equals(v)).filter((k, v) -> !"b".equals(v));
                joined = t2.join(right, (k, v) -> v, JOINER, store);
                break;
            }
            case "t1.filter.join(t2.filter, fk)": {
                KTable<String, String> left = builder.<String, String>table(p + "t1").filter((k, v) -> !"b".equals(v));
                KTable<String, String> right = builder.<String, String>table(p + "t2").filter((k, v) -> !"b".equals(v));
                joined = left.join(right, (k, v) -> v, JOINER, store);
                break;
            }
            case "t1.filter.filter.leftJoin(t1.filter.mapValues, fk)": {
                KTable<String, String> filtered = builder.<String, String>table(p + "t1").filter((k, v) -> !"b".equals(v));
                KTable<String, String> right = filtered.mapValues(CachedRuns::nextKey);
                joined = filtered.filter((k, v) -> !"b".equals(v)).leftJoin(right, (k, v) -> v, JOINER, store);
                break;
            }
            case "t1.filter.filter.join(t1.mapValues.filter, fk)": {
                KTable<String, String> t1 = builder.table(p + "t1");
                KTable<String, String> right = t1.mapValues(CachedRuns::nextKey).filter((k, v) -> !"b".equals(v));
                joined = t1.filter((k, v) -> !"b".equals(v)).filter((k, v) -> !"b".equals(v))
                        .join(right, (k, v) -> v, JOINER, store);
                break;
            }
            default:
                throw new IllegalArgumentException("unknown topology " + name);
        }
        joined.toStream().to(p + "out0");
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        long cacheBytes = Long.parseLong(args[1]);
        long commitMs = Long.parseLong(args[2]);
        JsonNode request = JSON.readTree(new String(System.in.readAllBytes(), StandardCharsets.UTF_8));
        if ("test-driver".equals(bootstrap)) {
            System.out.println(JSON.writeValueAsString(testDriver(request)));
            return;
        }
        String app = "cached-" + UUID.randomUUID().toString().substring(0, 8);
        String prefix = app + ".";
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory("cached-runs").toString());
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, cacheBytes);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, commitMs);
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        Properties client = new Properties();
        client.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        ObjectNode result = JSON.createObjectNode();
        try (Admin admin = Admin.create(client)) {
            admin.createTopics(List.of(new NewTopic(prefix + "t1", 2, (short) 1), new NewTopic(prefix + "t2", 2,
                    (short) 1), new NewTopic(prefix + "out0", 1, (short) 1))).all().get();
            Map<String, String> store = new HashMap<>();
            double dropped = 0;
            for (JsonNode run : request.get("runs")) {
                boolean inputsOnly = run.isObject() && run.path("inputs_only").asBoolean();
                produce(bootstrap, prefix, run.isObject() ? run.get("records") : run);
                Properties runProps = new Properties();
                runProps.putAll(props);
                if (inputsOnly) {   // no commit before close()
                    runProps.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 3_600_000L);
                }
                Topology topology = topology(request.get("topology").asText(), prefix);
                try (KafkaStreams streams = new KafkaStreams(topology, runProps)) {
                    streams.start();
                    if (inputsOnly) {
                        waitUntilProcessed(streams, (run.isObject() ? run.get("records") : run).size());
                    } else {
                        waitUntilAllRead(admin, app, prefix, streams);
                    }
                    store.clear();
                    store.putAll(storeContents(streams));
                    dropped += droppedRecords(streams.metrics());
                }
            }
            result.set("outputs", readAll(bootstrap, prefix + "out0"));
            result.set("store", JSON.valueToTree(store));
            result.put("dropped", dropped);
        }
        System.out.println(JSON.writeValueAsString(result));
    }

    /** ``store0``'s contents, once the application may be queried: a rebalance after the
     * last record was processed (FK joins create internal topics) makes the store
     * unavailable for a moment, so wait for it to end rather than fail. */
    private static Map<String, String> storeContents(KafkaStreams streams) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 300_000;
        while (true) {
            try {
                Map<String, String> store = new HashMap<>();
                ReadOnlyKeyValueStore<String, String> view = streams.store(
                        StoreQueryParameters.fromNameAndType("store0", QueryableStoreTypes.keyValueStore()));
                try (KeyValueIterator<String, String> all = view.all()) {
                    all.forEachRemaining(kv -> store.put(kv.key, kv.value));
                }
                return store;
            } catch (InvalidStateStoreException e) {
                if (System.currentTimeMillis() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
    }

    /** The runs' records piped in order into Kafka Streams' TopologyTestDriver, caching off
     * (it commits after every record anyway). */
    private static ObjectNode testDriver(JsonNode request) throws Exception {
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "cached-runs");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory("cached-runs").toString());
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        ObjectNode result = JSON.createObjectNode();
        try (TopologyTestDriver driver = new TopologyTestDriver(topology(request.get("topology").asText(), ""),
                props, Instant.EPOCH)) {
            Map<String, TestInputTopic<String, String>> inputs = new HashMap<>();
            for (JsonNode run : request.get("runs")) {
                for (JsonNode r : run.isObject() ? run.get("records") : run) {
                    inputs.computeIfAbsent(r.get("topic").asText(), t -> driver.createInputTopic(
                            t, new StringSerializer(), new StringSerializer()))
                            .pipeInput(text(r.get("key")), text(r.get("value")), r.get("timestamp").asLong());
                }
            }
            ArrayNode out = result.putArray("outputs");
            for (TestRecord<String, String> r : driver.createOutputTopic("out0", new StringDeserializer(),
                    new StringDeserializer()).readRecordsToList()) {
                ArrayNode row = out.addArray();
                row.add(r.key());
                row.add(r.value());
                row.add(r.timestamp());
            }
            Map<String, String> store = new HashMap<>();
            try (KeyValueIterator<String, String> all = driver.<String, String>getKeyValueStore("store0").all()) {
                all.forEachRemaining(kv -> store.put(kv.key, kv.value));
            }
            result.set("store", JSON.valueToTree(store));
            result.put("dropped", droppedRecords(driver.metrics()));
        }
        return result;
    }

    /** The tasks' dropped-records-total summed. */
    private static double droppedRecords(Map<MetricName, ? extends Metric> metrics) {
        return metrics.entrySet().stream()
                .filter(e -> e.getKey().name().equals("dropped-records-total")
                        && e.getKey().tags().containsKey("task-id"))
                .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue()).sum();
    }

    private static void produce(String bootstrap, String prefix, JsonNode run) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props, new StringSerializer(),
                new StringSerializer())) {
            for (JsonNode r : run) {
                producer.send(new ProducerRecord<>(prefix + r.get("topic").asText(), r.get("partition").asInt(),
                        r.get("timestamp").asLong(), text(r.get("key")), text(r.get("value"))));
            }
            producer.flush();
        }
    }

    /** Until the stream thread has processed {@code records} records (no commit yet: the
     * commit interval is an hour), so that what the closing commit writes to repartition
     * topics is read by the next run, with that run's records, in one commit. */
    private static void waitUntilProcessed(KafkaStreams streams, int records) throws Exception {
        long deadline = System.currentTimeMillis() + 300_000;
        while (streams.metrics().entrySet().stream()
                .filter(e -> e.getKey().name().equals("process-total")
                        && e.getKey().group().equals("stream-thread-metrics"))
                .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue()).sum() < records) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("the application did not process its input in 300 s");
            }
            Thread.sleep(100);
        }
    }

    /** Until the streams' group has committed every source topic's end offset (inputs and
     * repartitions), twice in a row: what a commit's cache flush wrote has been read too. */
    private static void waitUntilAllRead(Admin admin, String app, String prefix, KafkaStreams streams)
            throws Exception {
        int quiet = 0;
        long deadline = System.currentTimeMillis() + 300_000;
        while (quiet < 2) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("the application did not read all its input in 300 s");
            }
            Thread.sleep(500);
            if (streams.state() != KafkaStreams.State.RUNNING) {
                quiet = 0;
                continue;
            }
            Set<String> topics = admin.listTopics().names().get().stream()
                    .filter(t -> t.equals(prefix + "t1") || t.equals(prefix + "t2")
                            || (t.startsWith(app + "-") && t.endsWith("-repartition")))
                    .collect(Collectors.toSet());
            Map<TopicPartition, OffsetSpec> ends = new HashMap<>();
            for (var d : admin.describeTopics(topics).allTopicNames().get().values()) {
                d.partitions().forEach(p -> ends.put(new TopicPartition(d.name(), p.partition()), OffsetSpec.latest()));
            }
            var endOffsets = admin.listOffsets(ends).all().get();
            Map<TopicPartition, OffsetAndMetadata> committed =
                    admin.listConsumerGroupOffsets(app).partitionsToOffsetAndMetadata().get();
            boolean allRead = true;
            for (var e : endOffsets.entrySet()) {
                long end = e.getValue().offset();
                OffsetAndMetadata c = committed.get(e.getKey());
                if (end > 0 && (c == null || c.offset() < end)) {
                    allRead = false;
                }
            }
            quiet = allRead ? quiet + 1 : 0;
        }
    }

    private static ArrayNode readAll(String bootstrap, String topic) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        ArrayNode out = JSON.createArrayNode();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props, new StringDeserializer(),
                new StringDeserializer())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long end = consumer.endOffsets(List.of(tp)).get(tp);
            List<ConsumerRecord<String, String>> records = new ArrayList<>();
            while (consumer.position(tp) < end) {
                consumer.poll(Duration.ofMillis(500)).forEach(records::add);
            }
            for (ConsumerRecord<String, String> r : records) {
                ArrayNode row = out.addArray();
                row.add(r.key());
                row.add(r.value());
                row.add(r.timestamp());
            }
        }
        return out;
    }

    private static String text(JsonNode node) {
        return node == null || node.isNull() ? null : node.asText();
    }
}

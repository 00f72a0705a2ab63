package streamlib.oracle;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;

/**
 * Runs cases through Kafka Streams' TopologyTestDriver, caching off.
 *
 * <p>stdin: one JSON object per line, {"scenario": name, "case": n, "records":
 * [{"key": k, "value": v, "timestamp": t, "topic": name}, ...]} (k, v strings or null;
 * topic "in" unless given), piped in order. stdout: one line per case, {"scenario", "case", "output":
 * [{"key", "value", "timestamp", "headers": {name: utf-8 value}}]}, the records of
 * topic "out" in order. An exception in a case is reported as {"error": message}.
 */
public final class Oracle {

    private static final ObjectMapper JSON = new ObjectMapper();

    private Oracle() { }

    public static void main(String[] args) throws Exception {
        Path stateDir = Files.createTempDirectory("oracle-state");
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
             BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                JsonNode request = JSON.readTree(line);
                ObjectNode response = JSON.createObjectNode();
                response.set("scenario", request.get("scenario"));
                response.set("case", request.get("case"));
                try {
                    response.set("output", run(request, stateDir));
                } catch (RuntimeException e) {
                    response.put("error", String.valueOf(e));
                }
                out.write(JSON.writeValueAsString(response));
                out.newLine();
                out.flush();   // the tests read answers while later cases still run
            }
        }
    }

    private static ArrayNode run(JsonNode request, Path stateDir) {
        Scenarios.Scenario scenario = Scenarios.ALL.get(request.get("scenario").asText());
        if (scenario == null) {
            throw new IllegalArgumentException("unknown scenario " + request.get("scenario"));
        }
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "oracle");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.DSL_STORE_SUPPLIERS_CLASS_CONFIG, WindowStoresInRocksDB.class);
        props.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, LightRocksDB.class);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        // Emit-final windows and left/outer stream-stream joins look for closed windows at most
        // once per wall-clock second; the test driver's clock stands still, so that throttle
        // would hide results that stream time has made final. Stream time alone decides here.
        props.put(StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_WINDOWED_AGGREGATION, 0L);
        props.put(StreamsConfig.InternalConfig.EMIT_INTERVAL_MS_KSTREAMS_OUTER_JOIN_SPURIOUS_RESULTS_FIX, 0L);
        ArrayNode output = JSON.createArrayNode();
        try (TopologyTestDriver driver = new TopologyTestDriver(scenario.topology().get(), props, Instant.EPOCH)) {
            Map<String, TestInputTopic<String, String>> inputs = new HashMap<>();
            @SuppressWarnings("unchecked")
            TestOutputTopic<Object, Object> topic = driver.createOutputTopic("out",
                    (org.apache.kafka.common.serialization.Deserializer<Object>) scenario.outKey(),
                    (org.apache.kafka.common.serialization.Deserializer<Object>) scenario.outValue());
            for (JsonNode record : request.get("records")) {
                String name = record.hasNonNull("topic") ? record.get("topic").asText() : "in";
                TestInputTopic<String, String> input = inputs.computeIfAbsent(name, t -> driver.createInputTopic(
                        t, Serdes.String().serializer(), Serdes.String().serializer()));
                input.pipeInput(text(record.get("key")), text(record.get("value")),
                        record.get("timestamp").asLong());
            }
            for (TestRecord<Object, Object> record : topic.readRecordsToList()) {
                ObjectNode node = output.addObject();
                node.set("key", JSON.valueToTree(record.key()));
                node.set("value", JSON.valueToTree(record.value()));
                node.put("timestamp", record.timestamp());
                ObjectNode headers = node.putObject("headers");
                for (Header header : record.headers()) {
                    headers.put(header.key(), header.value() == null ? null
                            : new String(header.value(), StandardCharsets.UTF_8));
                }
            }
        }
        return output;
    }

    private static String text(JsonNode node) {
        return node == null || node.isNull() ? null : node.asText();
    }
}

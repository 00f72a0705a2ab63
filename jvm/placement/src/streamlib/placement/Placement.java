package streamlib.placement;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.util.CollectionAccumulator;
import scala.jdk.javaapi.CollectionConverters;

/** What streamlib's Python side calls (through Py4J) to place a stage's tasks. */
public final class Placement {
    private Placement() {
    }

    /**
     * {@code rows} as a new DataFrame over a {@link PlacedRDD}: partition {@code i} prefers
     * {@code locations[i]} (null: anywhere) and adds where it ran to {@code runs}, after
     * {@code label}.
     */
    public static Dataset<Row> place(Dataset<Row> rows, String label, String[] locations,
                                     CollectionAccumulator<String> runs) {
        PlacedRDD placed = new PlacedRDD(rows.queryExecution().toRdd(), label, locations, runs);
        return rows.sparkSession().internalCreateDataFrame(placed, rows.schema(), false);
    }

    /**
     * As {@link #place}, but partition {@code i} yields its rows only where it is placed: on
     * the executor of {@code locations[i]} (anywhere else it yields none and records nothing).
     */
    public static Dataset<Row> placeOnly(Dataset<Row> rows, String label, String[] locations,
                                         CollectionAccumulator<String> runs) {
        String[] only = new String[locations.length];
        for (int i = 0; i < locations.length; i++) {
            // Spark's location executor_<host>_<executor id>
            only[i] = locations[i] == null ? null : locations[i].substring(locations[i].lastIndexOf('_') + 1);
        }
        PlacedRDD placed = new PlacedRDD(rows.queryExecution().toRdd(), label, locations, runs, only);
        return rows.sparkSession().internalCreateDataFrame(placed, rows.schema(), false);
    }

    /**
     * As {@link #place}, with several stream tasks per Spark task: partition {@code i} of
     * {@code rows} goes to group {@code groupOf[i]}, and group {@code g} (one partition of the
     * result, its members run in order) prefers {@code locations[g]} (null: anywhere).
     */
    public static Dataset<Row> pack(Dataset<Row> rows, String label, int[] groupOf, String[] locations,
                                    CollectionAccumulator<String> runs) {
        List<List<Integer>> members = new ArrayList<>();
        for (int g = 0; g < locations.length; g++) {
            members.add(new ArrayList<>());
        }
        for (int i = 0; i < groupOf.length; i++) {
            members.get(groupOf[i]).add(i);
        }
        int[][] groups = new int[locations.length][];
        for (int g = 0; g < groups.length; g++) {
            groups[g] = members.get(g).stream().mapToInt(Integer::intValue).toArray();
        }
        PackedRDD packed = new PackedRDD(rows.queryExecution().toRdd(), label, groups, locations, runs);
        return rows.sparkSession().internalCreateDataFrame(packed, rows.schema(), false);
    }

    /** A new accumulator of the runs of placed partitions. */
    public static CollectionAccumulator<String> runs(SparkContext context, String name) {
        return context.collectionAccumulator(name);
    }

    /** The runs {@code runs} collected, then emptied. */
    public static String[] take(CollectionAccumulator<String> runs) {
        List<String> taken = new ArrayList<>(runs.value());
        runs.reset();
        return taken.toArray(new String[0]);
    }

    /** The live executors' locations, {@code executor_<host>_<id>}, the driver's excluded. */
    public static String[] liveExecutors() {
        List<String> found = new ArrayList<>();
        for (BlockManagerId id : CollectionConverters.asJava(
                SparkEnv.get().blockManager().master().getMemoryStatus().keySet())) {
            if (!id.isDriver()) {
                found.add("executor_" + id.host() + "_" + id.executorId());
            }
        }
        found.sort(null);
        return found.toArray(new String[0]);
    }
}

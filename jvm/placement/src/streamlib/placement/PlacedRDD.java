package streamlib.placement;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import org.apache.spark.Partition;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.util.CollectionAccumulator;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag$;

/**
 * Its parent's partitions, one to one, each preferring the executor that holds the state of
 * the stream task it feeds, and recording where it ran.
 *
 * <p>Spark's scheduler asks the last RDD of a stage for preferred locations and, finding none,
 * walks down its narrow dependencies: the {@code mapInArrow} stage over these rows inherits
 * them. A location {@code executor_<host>_<executorId>} is Spark's own
 * ({@code ExecutorCacheTaskLocation}), the kind {@code StateStoreRDD} gives; delay scheduling
 * ({@code spark.locality.wait.process}) then keeps the task there while that executor lives.
 */
public final class PlacedRDD extends RDD<InternalRow> {
    private static final long serialVersionUID = 1L;

    private final RDD<InternalRow> rows;
    /** Driver side only: read by the scheduler, not needed where the task runs. */
    private final transient String[] locations;
    /** Names the stage in what {@link #compute} records. */
    private final String label;
    private final CollectionAccumulator<String> runs;
    /**
     * Shipped with the tasks: partition {@code i} yields its rows only on executor
     * {@code only[i]} (null: anywhere), and none elsewhere. Standby catch-ups use it: one that
     * Spark runs on another executor (its own was busy past the locality wait, or is gone)
     * must not build a copy there.
     */
    private final String[] only;

    public PlacedRDD(RDD<InternalRow> rows, String label, String[] locations, CollectionAccumulator<String> runs) {
        this(rows, label, locations, runs, null);
    }

    public PlacedRDD(RDD<InternalRow> rows, String label, String[] locations, CollectionAccumulator<String> runs,
                     String[] only) {
        super(rows, ClassTag$.MODULE$.apply(InternalRow.class));
        this.rows = rows;
        this.label = label;
        this.locations = locations.clone();
        this.runs = runs;
        this.only = only == null ? null : only.clone();
    }

    @Override
    public Partition[] getPartitions() {
        return rows.partitions();
    }

    @Override
    public scala.collection.immutable.Seq<String> getPreferredLocations(Partition split) {
        int index = split.index();
        List<String> preferred = index < locations.length && locations[index] != null
                ? Arrays.asList(locations[index]) : Collections.emptyList();
        return CollectionConverters.asScala(preferred).toList();
    }

    @Override
    public scala.collection.Iterator<InternalRow> compute(Partition split, TaskContext context) {
        SparkEnv env = SparkEnv.get();
        int index = split.index();
        if (only != null && index < only.length && only[index] != null && !only[index].equals(env.executorId())) {
            return scala.collection.Iterator$.MODULE$.empty();
        }
        // "<label> <partition> <executor id> <host>": the driver maps partitions to stream tasks
        runs.add(label + " " + index + " " + env.executorId() + " " + env.blockManager().blockManagerId().host());
        return rows.iterator(split, context);
    }
}

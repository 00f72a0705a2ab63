package streamlib.placement;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.apache.spark.Dependency;
import org.apache.spark.NarrowDependency;
import org.apache.spark.Partition;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.util.CollectionAccumulator;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag$;

/**
 * Groups of its parent's partitions, one group per partition, each group preferring one
 * executor and recording where each of its parent partitions ran.
 *
 * <p>{@link PlacedRDD} gives every stream task a Spark task of its own; on executors with fewer
 * cores than tasks those run in waves, each paying a Python task's fixed cost. Here the tasks
 * that share a home run in one Spark task per core of it, as {@code coalesce} packs them
 * under {@code local[n]}, and still stay where their state is.
 */
public final class PackedRDD extends RDD<InternalRow> {
    private static final long serialVersionUID = 1L;

    private final RDD<InternalRow> rows;
    /** Driver side only: read by the scheduler. */
    private final transient String[] locations;
    private final String label;
    private final CollectionAccumulator<String> runs;

    /** One partition: the parent partitions of one group, run one after the other. */
    static final class Group implements Partition {
        private static final long serialVersionUID = 1L;
        private final int index;
        final Partition[] parents;

        Group(int index, Partition[] parents) {
            this.index = index;
            this.parents = parents;
        }

        @Override
        public int index() {
            return index;
        }

        @Override
        public int hashCode() {
            return index;
        }

        @Override
        public boolean equals(Object other) {
            return this == other;
        }
    }

    /** Partition {@code i} depends on the parent partitions of group {@code i}. */
    static final class Grouped extends NarrowDependency<InternalRow> {
        private static final long serialVersionUID = 1L;
        private final int[][] groups;

        Grouped(RDD<InternalRow> rows, int[][] groups) {
            super(rows);
            this.groups = groups;
        }

        @Override
        public scala.collection.immutable.Seq<Object> getParents(int partitionId) {
            List<Object> parents = new ArrayList<>();
            for (int parent : groups[partitionId]) {
                parents.add(parent);
            }
            return CollectionConverters.asScala(parents).toList();
        }
    }

    private final int[][] groups;

    public PackedRDD(RDD<InternalRow> rows, String label, int[][] groups, String[] locations,
                     CollectionAccumulator<String> runs) {
        super(rows.context(), dependencies(rows, groups), ClassTag$.MODULE$.apply(InternalRow.class));
        this.rows = rows;
        this.label = label;
        this.groups = groups.clone();
        this.locations = locations.clone();
        this.runs = runs;
    }

    private static scala.collection.immutable.Seq<Dependency<?>> dependencies(RDD<InternalRow> rows, int[][] groups) {
        List<Dependency<?>> dependencies = Collections.singletonList(new Grouped(rows, groups));
        return CollectionConverters.asScala(dependencies).toList();
    }

    @Override
    public Partition[] getPartitions() {
        Partition[] parents = rows.partitions();
        Partition[] packed = new Partition[groups.length];
        for (int i = 0; i < groups.length; i++) {
            Partition[] members = new Partition[groups[i].length];
            for (int j = 0; j < members.length; j++) {
                members[j] = parents[groups[i][j]];
            }
            packed[i] = new Group(i, members);
        }
        return packed;
    }

    @Override
    public scala.collection.immutable.Seq<String> getPreferredLocations(Partition split) {
        String location = locations[split.index()];
        List<String> preferred = location == null ? Collections.emptyList() : Collections.singletonList(location);
        return CollectionConverters.asScala(preferred).toList();
    }

    @Override
    public scala.collection.Iterator<InternalRow> compute(Partition split, TaskContext context) {
        SparkEnv env = SparkEnv.get();
        Partition[] members = ((Group) split).parents;
        for (Partition member : members) {
            // "<label> <partition> <executor id> <host>", as PlacedRDD records it
            runs.add(label + " " + member.index() + " " + env.executorId() + " " + env.blockManager().blockManagerId().host());
        }
        scala.collection.Iterator<InternalRow> all = scala.collection.Iterator$.MODULE$.empty();
        for (Partition member : members) {
            final Partition parent = member;
            all = all.concat(() -> rows.iterator(parent, context));
        }
        return all;
    }
}

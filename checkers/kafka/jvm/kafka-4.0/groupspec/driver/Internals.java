package groupspec.driver;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime;
import org.apache.kafka.coordinator.group.GroupCoordinatorShard;
import org.apache.kafka.coordinator.group.GroupMetadataManager;
import org.apache.kafka.coordinator.group.OffsetAndMetadata;
import org.apache.kafka.coordinator.group.classic.ClassicGroup;
import org.apache.kafka.coordinator.group.classic.ClassicGroupState;
import org.apache.kafka.timeline.TimelineHashMap;

/**
 * Every place the Kafka 4.0 driver reads what Kafka keeps private, in one class (Kafka.field, by name): the
 * shard the runtime holds for a partition, and what a snapshot shows that no public method does.  Names are
 * those of Kafka 4.0.2's sources; a later Kafka that renames one fails here, loudly.
 *
 * CoordinatorRuntime.coordinators (TopicPartition to CoordinatorContext) → CoordinatorContext.coordinator
 * (SnapshottableCoordinator, null once unloaded) → its coordinator (the GroupCoordinatorShard) and its
 * lastCommittedOffset; GroupCoordinatorShard.groupMetadataManager / offsetMetadataManager;
 * OffsetMetadataManager.offsets.offsetsByGroup (group → topic → partition → OffsetAndMetadata, timeline maps);
 * ClassicGroup.pendingJoinMembers and staticMembers.
 */
final class Internals {

    private Internals() {
    }

    /** The SnapshottableCoordinator the runtime holds for {@code tp}, or null. */
    private static Object snapshottable(CoordinatorRuntime<?, ?> runtime, TopicPartition tp) {
        Map<TopicPartition, ?> coordinators = Kafka.field(runtime, "coordinators");
        Object context = coordinators.get(tp);
        return context == null ? null : Kafka.field(context, "coordinator");
    }

    /** The shard of {@code tp}'s coordinator (loading or loaded), or null if the runtime holds none. */
    static GroupCoordinatorShard shard(CoordinatorRuntime<?, ?> runtime, TopicPartition tp) {
        Object s = snapshottable(runtime, tp);
        return s == null ? null : Kafka.field(s, "coordinator");
    }

    /** The offset up to which {@code tp}'s coordinator has seen its writes committed (what reads read at). */
    static long lastCommittedOffset(CoordinatorRuntime<?, ?> runtime, TopicPartition tp) {
        Object s = snapshottable(runtime, tp);
        if (s == null) {
            throw new IllegalStateException("no coordinator for " + tp);
        }
        return Kafka.<Long>field(s, "lastCommittedOffset");
    }

    static GroupMetadataManager groups(GroupCoordinatorShard shard) {
        return Kafka.field(shard, "groupMetadataManager");
    }

    /** Whether a classic group (its latest state) has members or is rebalancing. */
    static boolean anyClassicGroupInUse(GroupCoordinatorShard shard) {
        TimelineHashMap<String, Object> all = Kafka.field(groups(shard), "groups");
        for (Object g : all.values()) {
            if (g instanceof ClassicGroup c && (c.numMembers() > 0 || !c.isInState(ClassicGroupState.EMPTY))) {
                return true;
            }
        }
        return false;
    }

    /** A group's committed offsets ({@code topic-N}: offset) as of {@code committedOffset}, sorted. */
    static Map<String, Long> offsets(GroupCoordinatorShard shard, String group, long committedOffset) {
        Object offsets = Kafka.field(Kafka.field(shard, "offsetMetadataManager"), "offsets");
        TimelineHashMap<String, TimelineHashMap<String, TimelineHashMap<Integer, OffsetAndMetadata>>> byGroup =
            Kafka.field(offsets, "offsetsByGroup");
        Map<String, Long> out = new TreeMap<>();
        TimelineHashMap<String, TimelineHashMap<Integer, OffsetAndMetadata>> topics = byGroup.get(group, committedOffset);
        if (topics != null) {
            topics.entrySet(committedOffset).forEach(t ->
                t.getValue().entrySet(committedOffset).forEach(p ->
                    out.put(t.getKey() + "-" + p.getKey(), p.getValue().committedOffset)));
        }
        return out;
    }

    static Set<String> pendingJoinMembers(ClassicGroup group) {
        return Kafka.field(group, "pendingJoinMembers");
    }

    static Map<String, String> staticMembers(ClassicGroup group) {
        return Kafka.field(group, "staticMembers");
    }
}

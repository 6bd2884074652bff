package groupspec.driver;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.coordinator.group.GroupCoordinator;

/**
 * One of Kafka's group coordinators, made deterministic: its own clock and timer ({@link ManualTime},
 * {@link ManualTimer}), its log behind {@link Appends}, and whatever else it needs in place of a broker.
 * The requests go through Kafka's own {@link GroupCoordinator} interface (the one KafkaApis calls), so the
 * same {@link Apis} drives every Kafka version; what differs between versions is behind this interface.
 */
public interface Target {

    /** Kafka's coordinator, as KafkaApis sees it. */
    GroupCoordinator coordinator();

    ManualTimer timer();

    Appends appends();

    /** After every command: let the coordinator catch up with what the log acknowledged. */
    default void settle() {
    }

    /** The offsets partition moves away (the broker resigns as its leader). */
    void unload();

    /** The partition is being loaded here: elected, the load under way and not finished. */
    void beginLoad();

    /** The load finishes, from the records the log holds. */
    void load();

    /** The group is marked Dead while requests can still reach it. */
    void markDead(String group);

    /** The offset-expiry task runs now. */
    void expireOffsets();

    /** Whether a group it holds has members or is rebalancing (a step may then write an empty group). */
    default boolean anyGroupInUse() {
        return false;
    }

    /** The coordinator's view of a group in the scenario contract's snapshot fields, or null if not held. */
    ObjectNode snapshot(String group, ObjectNode out);

    void close();

    /** Makes a target from a scenario's config (Kafka's keys, every one given). */
    interface Factory {
        Target create(java.util.Map<String, Long> config) throws Exception;
    }
}

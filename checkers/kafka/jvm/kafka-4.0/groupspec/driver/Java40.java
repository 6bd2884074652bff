package groupspec.driver;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Properties;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.yammer.metrics.core.MetricsRegistry;
import kafka.server.KafkaConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.internals.Topic;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime;
import org.apache.kafka.coordinator.common.runtime.CoordinatorShardBuilderSupplier;
import org.apache.kafka.coordinator.group.Group;
import org.apache.kafka.coordinator.group.GroupConfigManager;
import org.apache.kafka.coordinator.group.GroupCoordinator;
import org.apache.kafka.coordinator.group.GroupCoordinatorConfig;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.GroupCoordinatorService;
import org.apache.kafka.coordinator.group.GroupCoordinatorShard;
import org.apache.kafka.coordinator.group.GroupspecServices;
import org.apache.kafka.coordinator.group.classic.ClassicGroup;
import org.apache.kafka.coordinator.group.classic.ClassicGroupMember;
import org.apache.kafka.coordinator.group.classic.ClassicGroupState;
import org.apache.kafka.coordinator.group.metrics.GroupCoordinatorMetrics;
import org.apache.kafka.coordinator.group.metrics.GroupCoordinatorRuntimeMetrics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kafka 4.0's Java group coordinator, the one a 4.0 broker serves classic groups with: the real
 * {@link GroupCoordinatorService} (the interface KafkaApis calls) on a real {@link CoordinatorRuntime} driving
 * the real GroupCoordinatorShard, put together as GroupCoordinatorService.Builder.build() and BrokerServer do
 * it, with the pieces that would bring in threads or a broker replaced by deterministic ones: the runtime's
 * events run at once ({@link DirectEvents}), its clock and timer are {@link ManualTime} and {@link ManualTimer},
 * it writes to {@link RecordLog} through {@link Appends} ({@link OffsetsWriter}) and loads from it when the
 * scenario says ({@link OffsetsLoader}).
 */
public final class Java40 implements Target {

    /** The Kafka 4.0 target's factory (the driver's argument). */
    public static final class Factory implements Target.Factory {
        @Override
        public Target create(Map<String, Long> config) throws Exception {
            return new Java40(config);
        }
    }

    private static final Logger LOG = LoggerFactory.getLogger(Java40.class);
    private static final int NODE = 1;
    private static final int PARTITION = 0;
    static final TopicPartition OFFSETS = new TopicPartition(Topic.GROUP_METADATA_TOPIC_NAME, PARTITION);
    /**
     * offsets.retention.check.interval.ms: the shard's "expire-group-metadata" timer must never fire on its own
     * (the scenario's expire_offsets step runs it); far beyond any scenario's clock, and far from overflowing
     * the timer's now + delay.
     */
    private static final long NEVER_MS = Long.MAX_VALUE / 4;

    private final ManualTime time = new ManualTime();
    private final ManualTimer timer = new ManualTimer(time);
    private final Appends appends = new Appends();
    private final RecordLog log = new RecordLog();
    private final Metrics metrics = new Metrics(time);
    private final DirectEvents events;
    private final OffsetsWriter writer;
    private final OffsetsLoader loader;
    private final CoordinatorRuntime<GroupCoordinatorShard, CoordinatorRecord> runtime;
    private final GroupCoordinatorService service;
    private final GroupCoordinatorConfig config;
    /** The offsets partition's leader epoch: every election and resignation is a new one, as on a broker. */
    private int epoch;

    private Java40(Map<String, Long> scenario) {
        Properties props = new Properties();
        // a KRaft broker, node 1, its group coordinator on one offsets partition
        props.put("process.roles", "broker");
        props.put("node.id", String.valueOf(NODE));
        props.put("controller.quorum.voters", "2@127.0.0.1:9093");
        props.put("controller.listener.names", "CONTROLLER");
        props.put("listeners", "PLAINTEXT://127.0.0.1:9092");
        props.put("listener.security.protocol.map", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT");
        props.put("offsets.topic.num.partitions", "1");
        props.put("offsets.topic.replication.factor", "1");
        // The contract's appends complete at once: a batch is written as soon as an operation made it, not
        // after the 5 ms Kafka 4.0 lets writes gather (a linger of 0 flushes in CoordinatorContext.append).
        props.put("group.coordinator.append.linger.ms", "0");
        props.put("offsets.retention.check.interval.ms", String.valueOf(NEVER_MS));
        // A write held in the log stays held until the scenario completes it (the contract's storage steps): the
        // runtime's own write timeout (offsets.commit.timeout.ms, CoordinatorRuntime.OperationTimeout) would give
        // up on it after 5 s, as the Scala coordinator's ReplicaManager would on acks=all, which the contract
        // expresses as `complete: REQUEST_TIMED_OUT`.  (Kafka validates it as an int of at least 1.)
        props.put("offsets.commit.timeout.ms", String.valueOf(Integer.MAX_VALUE));
        for (Map.Entry<String, Long> e : scenario.entrySet()) {
            if (Kafka.CONFIG_KEYS.contains(e.getKey())) {
                props.put(e.getKey(), String.valueOf(e.getValue()));
            }
        }
        // what BrokerServer builds its coordinator from: KafkaConfig's groupCoordinatorConfig, and the group
        // config manager from its defaults
        KafkaConfig kafkaConfig = KafkaConfig.fromProps(props);
        config = kafkaConfig.groupCoordinatorConfig();
        GroupConfigManager groupConfigs =
            new GroupConfigManager(config.extractGroupConfigMap(kafkaConfig.shareGroupConfig()));
        GroupCoordinatorRuntimeMetrics runtimeMetrics = new GroupCoordinatorRuntimeMetrics(metrics);
        // a registry of its own (not Yammer's default), so that sessions do not share gauges
        GroupCoordinatorMetrics groupMetrics = new GroupCoordinatorMetrics(new MetricsRegistry(), metrics);

        events = new DirectEvents(time, runtimeMetrics);
        writer = new OffsetsWriter(log, appends, events);
        loader = new OffsetsLoader(log, writer, time);

        // GroupCoordinatorService.Builder.build(), but for the event processor and the executor service
        String logPrefix = String.format("GroupCoordinator id=%d", NODE);
        LogContext logContext = new LogContext(String.format("[%s] ", logPrefix));
        CoordinatorShardBuilderSupplier<GroupCoordinatorShard, CoordinatorRecord> supplier = () ->
            new GroupCoordinatorShard.Builder(config, groupConfigs).withAuthorizer(Optional.empty());
        runtime = new CoordinatorRuntime.Builder<GroupCoordinatorShard, CoordinatorRecord>()
            .withTime(time)
            .withTimer(timer)
            .withLogPrefix(logPrefix)
            .withLogContext(logContext)
            .withEventProcessor(events)
            .withPartitionWriter(writer)
            .withLoader(loader)
            .withCoordinatorShardBuilderSupplier(supplier)
            .withDefaultWriteTimeOut(Duration.ofMillis(config.offsetCommitTimeoutMs()))
            .withCoordinatorRuntimeMetrics(runtimeMetrics)
            .withCoordinatorMetrics(groupMetrics)
            .withSerializer(new GroupCoordinatorRecordSerde())
            .withCompression(Compression.of(config.offsetTopicCompressionType()).build())
            .withAppendLingerMs(config.appendLingerMs())
            .withExecutorService(new NoTasks())
            .build();
        service = GroupspecServices.create(logContext, config, runtime, groupMetrics, groupConfigs);
        service.startup(() -> 1);
        // the partition is this broker's from the start, loaded from an empty log
        load();
    }

    /**
     * The runtime's executor service, on which CoordinatorExecutorImpl runs a shard's asynchronous tasks: only
     * consumer groups (KIP-848 regular-expression subscriptions) schedule any, never a classic group; one that
     * came would be refused rather than run on a thread of its own.
     */
    private static final class NoTasks extends AbstractExecutorService {
        private boolean shutdown;

        @Override
        public void execute(Runnable command) {
            throw new RejectedExecutionException("the groupspec driver runs classic groups only; no coordinator "
                + "task is expected (CoordinatorExecutorImpl serves consumer groups' regular expressions)");
        }

        @Override
        public void shutdown() {
            shutdown = true;
        }

        @Override
        public List<Runnable> shutdownNow() {
            shutdown = true;
            return List.of();
        }

        @Override
        public boolean isShutdown() {
            return shutdown;
        }

        @Override
        public boolean isTerminated() {
            return shutdown;
        }

        @Override
        public boolean awaitTermination(long timeout, TimeUnit unit) {
            return shutdown;
        }
    }

    // ------------------------------------------------------------------ Target

    @Override
    public GroupCoordinator coordinator() {
        return service;
    }

    @Override
    public ManualTimer timer() {
        return timer;
    }

    @Override
    public Appends appends() {
        return appends;
    }

    /**
     * Nothing is left over after a command here: events run as they are enqueued, and a batch not held is
     * committed inside its append (OffsetsWriter).  Draining the processor is what catching up means, should
     * anything ever be queued.
     */
    @Override
    public void settle() {
        events.drain();
    }

    /** The partition is held here and loaded (the runtime's coordinator is ACTIVE). */
    private boolean active() {
        return runtime.activeTopicPartitions().contains(OFFSETS);
    }

    /**
     * The broker becomes a follower of the partition: BrokerMetadataPublisher.updateCoordinator resigns with the
     * new leader's epoch (the runtime ignores a resignation whose epoch is not above the one it loaded with).
     * A load under way then fails, as CoordinatorLoaderImpl's does when the log is no longer the leader's.
     */
    @Override
    public void unload() {
        service.onResignation(PARTITION, OptionalInt.of(++epoch));
        loader.abandon();
        writer.abandon();
    }

    /** The contract's begin_load: a loaded partition is unloaded first; a load already under way goes on. */
    @Override
    public void beginLoad() {
        if (active()) {
            unload();
        }
        if (loader.waiting()) {
            return;
        }
        loader.hold();
        service.onElection(PARTITION, ++epoch);
    }

    @Override
    public void load() {
        if (loader.waiting()) {
            loader.finish();
        } else {
            // no load under way: an election, loaded to its end (on a partition already active the runtime
            // does nothing: scheduleLoadOperation's "already active")
            service.onElection(PARTITION, ++epoch);
        }
        events.drain();
    }

    /** The classic group as the shard holds it now (uncommitted changes too), or null. */
    private ClassicGroup group(String groupId) {
        if (!active()) {
            return null;
        }
        Group g;
        try {
            g = Internals.groups(Internals.shard(runtime, OFFSETS)).group(groupId);
        } catch (GroupIdNotFoundException e) {
            return null;
        }
        if (!(g instanceof ClassicGroup)) {
            throw new IllegalStateException("group " + groupId + " is a " + g.type() + " group, not a classic one");
        }
        return (ClassicGroup) g;
    }

    @Override
    public void markDead(String groupId) {
        ClassicGroup g = group(groupId);
        if (g != null) {
            g.transitionTo(ClassicGroupState.DEAD);
        }
    }

    /**
     * What the shard's "expire-group-metadata" timer runs (GroupCoordinatorShard.scheduleGroupMetadataExpiration),
     * now: cleanupGroupMetadata as a write operation of the runtime, so that its tombstones go through the
     * writer as the timer's would.  Like that timer's event, a failure (the partition not loaded) is ignored.
     */
    @Override
    public void expireOffsets() {
        runtime.scheduleWriteOperation("expire-group-metadata", OFFSETS,
                Duration.ofMillis(config.offsetCommitTimeoutMs()), GroupCoordinatorShard::cleanupGroupMetadata)
            .exceptionally(e -> {
                LOG.info("expire_offsets: the write did not run: {}", e.getMessage());
                return null;
            });
    }

    @Override
    public boolean anyGroupInUse() {
        return active() && Internals.anyClassicGroupInUse(Internals.shard(runtime, OFFSETS));
    }

    @Override
    public ObjectNode snapshot(String groupId, ObjectNode out) {
        ClassicGroup g = group(groupId);
        if (g == null) {
            return null;
        }
        out.put("state", g.currentState().toString());
        out.put("generation", g.generationId());
        out.put("leader", g.leaderOrNull());
        out.put("protocol", g.protocolName().orElse(null));
        out.put("protocol_type", g.protocolType().orElse(null));
        ArrayNode members = out.putArray("members");
        g.allMemberIds().forEach(members::add);
        ArrayNode pending = out.putArray("pending_members");
        Internals.pendingJoinMembers(g).forEach(pending::add);
        ObjectNode statics = out.putObject("static_members");
        Internals.staticMembers(g).forEach(statics::put);
        ObjectNode assignment = out.putObject("assignment");
        for (ClassicGroupMember m : g.allMembers()) {
            assignment.put(m.memberId(), m.assignment());
        }
        // the offsets a read sees (OffsetFetch reads at the last committed offset), as the Scala coordinator's
        // cache holds an offset only once its append completed
        ObjectNode offsets = out.putObject("offsets");
        GroupCoordinatorShard shard = Internals.shard(runtime, OFFSETS);
        Internals.offsets(shard, groupId, Internals.lastCommittedOffset(runtime, OFFSETS)).forEach(offsets::put);
        return out;
    }

    @Override
    public void close() {
        // closes the runtime (its loader, timer, processor and coordinators), the metrics and the group configs
        service.shutdown();
        metrics.close();
    }
}

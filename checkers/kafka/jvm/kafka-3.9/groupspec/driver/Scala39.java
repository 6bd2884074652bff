package groupspec.driver;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import kafka.cluster.Partition;
import kafka.coordinator.group.DelayedHeartbeat;
import kafka.coordinator.group.DelayedRebalance;
import kafka.coordinator.group.GroupCoordinatorAdapter;
import kafka.coordinator.group.GroupMetadata;
import kafka.coordinator.group.GroupMetadataManager;
import kafka.coordinator.group.MemberMetadata;
import kafka.log.UnifiedLog;
import kafka.server.DelayedOperationPurgatory;
import kafka.server.KafkaConfig;
import kafka.server.ReplicaManager;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.internals.Topic;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.requests.ProduceResponse.PartitionResponse;
import org.apache.kafka.coordinator.group.GroupCoordinator;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.FetchDataInfo;
import org.apache.kafka.storage.internals.log.LogOffsetMetadata;
import org.mockito.Mockito;
import org.mockito.invocation.InvocationOnMock;
import scala.Function1;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Kafka 3.9's Scala {@code kafka.coordinator.group.GroupCoordinator}, the implementation the table
 * specifies, behind {@code GroupCoordinatorAdapter} (the interface KafkaApis calls in a 3.9 broker), put
 * together as Kafka's own {@code GroupCoordinatorTest} does it: a mocked {@code ReplicaManager} (here
 * writing to {@link RecordLog} through {@link Appends}), purgatories on {@link ManualTimer}, no reaper
 * threads.  The group metadata manager's scheduler (which loads and unloads the offsets partition) is
 * replaced by {@link Steps}, so that a load runs when a scenario says.
 */
public final class Scala39 implements Target {

    /** The Kafka 3.9 target's factory (the driver's argument). */
    public static final class Factory implements Target.Factory {
        @Override
        public Target create(Map<String, Long> config) throws Exception {
            return new Scala39(config);
        }
    }

    private static final int PARTITION = 0;
    private static final TopicPartition OFFSETS = new TopicPartition(Topic.GROUP_METADATA_TOPIC_NAME, PARTITION);

    private final ManualTime time = new ManualTime();
    private final ManualTimer timer = new ManualTimer(time);
    private final Appends appends = new Appends();
    private final RecordLog log = new RecordLog();
    private final Steps steps = new Steps();
    private final kafka.coordinator.group.GroupCoordinator groupCoordinator;
    private final GroupMetadataManager groups;
    private final GroupCoordinatorAdapter adapter;
    private int epoch;
    private Partition partition;
    /** A load under way (begin_load): the loading thread waits for {@link #load}. */
    private Loading loading;

    private Scala39(Map<String, Long> config) throws Exception {
        Properties props = new Properties();
        // a KRaft broker (no ZooKeeper), node 1, its group coordinator on one offsets partition
        props.put("process.roles", "broker");
        props.put("node.id", "1");
        props.put("controller.quorum.voters", "2@127.0.0.1:9093");
        props.put("controller.listener.names", "CONTROLLER");
        props.put("listeners", "PLAINTEXT://127.0.0.1:9092");
        props.put("listener.security.protocol.map", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT");
        props.put("offsets.topic.num.partitions", "1");
        props.put("offsets.topic.replication.factor", "1");
        for (Map.Entry<String, Long> e : config.entrySet()) {
            if (Kafka.CONFIG_KEYS.contains(e.getKey())) {
                props.put(e.getKey(), String.valueOf(e.getValue()));
            }
        }
        KafkaConfig kafkaConfig = KafkaConfig.fromProps(props);
        ReplicaManager replicaManager = Mockito.mock(ReplicaManager.class, this::replicaManager);
        DelayedOperationPurgatory<DelayedHeartbeat> heartbeats =
            new DelayedOperationPurgatory<>("Heartbeat", timer, 1, 1000, false, true);
        DelayedOperationPurgatory<DelayedRebalance> rebalances =
            new DelayedOperationPurgatory<>("Rebalance", timer, 1, 1000, false, true);
        groupCoordinator = kafka.coordinator.group.GroupCoordinator$.MODULE$.apply(kafkaConfig, replicaManager, heartbeats,
            rebalances, time, new Metrics());
        groups = groupCoordinator.groupManager();
        Field scheduler = GroupMetadataManager.class.getDeclaredField("scheduler");
        scheduler.setAccessible(true);
        scheduler.set(groups, steps);
        adapter = new GroupCoordinatorAdapter(groupCoordinator, time);
        adapter.startup(() -> 1);
        // the partition is this broker's from the start, loaded from an empty log
        load();
    }

    // ------------------------------------------------------------------ the broker around the coordinator

    /** The mocked ReplicaManager: every method the group metadata manager calls, by name. */
    private Object replicaManager(InvocationOnMock call) throws Throwable {
        switch (call.getMethod().getName()) {
            case "getMagic":
                return Option.apply(RecordBatch.CURRENT_MAGIC_VALUE);
            case "appendRecords":
                append(call);
                return null;
            case "getLog":
                return loading == null ? Option.empty() : Option.apply(loading.log());
            case "getLogEndOffset":
                return Option.apply(log.endOffset());
            case "onlinePartition":
                return Option.apply(partition());
            default:
                return Mockito.RETURNS_DEFAULTS.answer(call);
        }
    }

    /** ReplicaManager.appendRecords: the records of one partition, answered through the callback. */
    @SuppressWarnings("unchecked")
    private void append(InvocationOnMock call) {
        scala.collection.Map<TopicPartition, MemoryRecords> entries = null;
        Function1<scala.collection.Map<TopicPartition, PartitionResponse>, Object> callback = null;
        for (Object arg : call.getArguments()) {
            if (arg instanceof scala.collection.Map && entries == null) {
                entries = (scala.collection.Map<TopicPartition, MemoryRecords>) arg;
            } else if (arg instanceof Function1 && callback == null) {
                callback = (Function1<scala.collection.Map<TopicPartition, PartitionResponse>, Object>) arg;
            }
        }
        MemoryRecords records = entries.apply(OFFSETS);
        Function1<scala.collection.Map<TopicPartition, PartitionResponse>, Object> answer = callback;
        java.util.function.Consumer<Errors> done = error -> {
            PartitionResponse response = new PartitionResponse(error);
            if (error == Errors.NONE) {
                // the batch's offset matters: a group keeps the commit of the later batch (olderThan)
                long base = log.endOffset();
                log.append(records);
                response = new PartitionResponse(error, base, RecordBatch.NO_TIMESTAMP, 0L);
            }
            answer.apply(scala.collection.immutable.Map$.MODULE$.<TopicPartition, PartitionResponse>empty()
                .updated(OFFSETS, response));
        };
        Errors failure = appends.takeFailure();
        if (failure != null) {
            done.accept(failure);
        } else if (appends.holding()) {
            appends.park(done);
        } else {
            done.accept(Errors.NONE);
        }
    }

    /** The offsets partition, for the tombstones offset expiry writes straight to the leader's log (acks=0). */
    private Partition partition() {
        if (partition == null) {
            partition = Mockito.mock(Partition.class, call -> {
                if (call.getMethod().getName().equals("appendRecordsToLeader")) {
                    log.append((MemoryRecords) call.getArgument(0));
                }
                return Mockito.RETURNS_DEFAULTS.answer(call);
            });
        }
        return partition;
    }

    /** A load in the group metadata manager's scheduler thread, stopped where it reads the log. */
    private final class Loading {
        final CountDownLatch reading = new CountDownLatch(1);
        final CountDownLatch proceed = new CountDownLatch(1);
        final UnifiedLog unified = Mockito.mock(UnifiedLog.class, call -> {
            switch (call.getMethod().getName()) {
                case "logStartOffset":
                    return 0L;
                case "read":
                    long from = call.getArgument(0);
                    return new FetchDataInfo(new LogOffsetMetadata(from), log.readFrom(from));
                default:
                    return Mockito.RETURNS_DEFAULTS.answer(call);
            }
        });
        Thread thread;

        UnifiedLog log() {
            reading.countDown();
            try {
                proceed.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return unified;
        }
    }

    /**
     * The group metadata manager's scheduler: its tasks (a partition's load or unload) wait here until the
     * driver runs them.  A KafkaScheduler, because that is the field's type; never started.
     */
    private static final class Steps extends KafkaScheduler {
        private final List<Runnable> tasks = new ArrayList<>();

        Steps() {
            super(1, true, "groupspec-");
        }

        @Override
        public void startup() {
        }

        @Override
        public void shutdown() {
        }

        @Override
        public ScheduledFuture<?> schedule(String name, Runnable task, long delayMs, long periodMs) {
            tasks.add(task);
            return null;
        }

        List<Runnable> take() {
            List<Runnable> out = new ArrayList<>(tasks);
            tasks.clear();
            return out;
        }
    }

    // ------------------------------------------------------------------ Target

    @Override
    public GroupCoordinator coordinator() {
        return adapter;
    }

    @Override
    public ManualTimer timer() {
        return timer;
    }

    @Override
    public Appends appends() {
        return appends;
    }

    @Override
    public void unload() {
        finishLoading();
        adapter.onResignation(PARTITION, OptionalInt.of(epoch));
        steps.take().forEach(Runnable::run);
    }

    @Override
    public void beginLoad() {
        if (groups.isPartitionOwned(PARTITION)) {
            unload();
        }
        if (loading != null) {
            return;
        }
        adapter.onElection(PARTITION, ++epoch);
        Loading l = new Loading();
        loading = l;
        List<Runnable> tasks = steps.take();
        l.thread = new Thread(() -> tasks.forEach(Runnable::run), "group-metadata-manager-load");
        l.thread.start();
        try {
            if (!l.reading.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the load did not reach the log within 30 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void load() {
        if (loading == null) {
            // no load under way: one runs to its end (on an owned partition Kafka's does nothing:
            // addLoadingPartition refuses it)
            adapter.onElection(PARTITION, ++epoch);
            Loading l = new Loading();
            l.proceed.countDown();
            loading = l;
            List<Runnable> tasks = steps.take();
            l.thread = new Thread(() -> tasks.forEach(Runnable::run), "group-metadata-manager-load");
            l.thread.start();
        }
        finishLoading();
    }

    private void finishLoading() {
        Loading l = loading;
        if (l == null) {
            return;
        }
        l.proceed.countDown();
        try {
            l.thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        loading = null;
    }

    @Override
    public void markDead(String group) {
        Option<GroupMetadata> g = groups.getGroup(group);
        if (g.isDefined()) {
            GroupMetadata m = g.get();
            m.lock().lock();
            try {
                m.transitionTo(kafka.coordinator.group.Dead$.MODULE$);
            } finally {
                m.lock().unlock();
            }
        }
    }

    @Override
    public void expireOffsets() {
        groups.cleanupGroupMetadata();
    }

    @Override
    public ObjectNode snapshot(String group, ObjectNode out) {
        Option<GroupMetadata> found = groups.getGroup(group);
        if (found.isEmpty()) {
            return null;
        }
        GroupMetadata g = found.get();
        out.put("state", g.currentState().toString());
        out.put("generation", g.generationId());
        out.put("leader", g.leaderOrNull());
        out.put("protocol", g.protocolName().isDefined() ? g.protocolName().get() : null);
        out.put("protocol_type", g.protocolType().isDefined() ? g.protocolType().get() : null);
        ArrayNode members = out.putArray("members");
        CollectionConverters.asJava(g.allMembers()).forEach(members::add);
        ArrayNode pending = out.putArray("pending_members");
        CollectionConverters.asJava(Kafka.<scala.collection.mutable.HashSet<String>>field(g, "pendingMembers"))
            .forEach(pending::add);
        ObjectNode statics = out.putObject("static_members");
        CollectionConverters.asJava(Kafka.<scala.collection.mutable.HashMap<String, String>>field(g, "staticMembers"))
            .forEach(statics::put);
        ObjectNode assignment = out.putObject("assignment");
        for (MemberMetadata m : CollectionConverters.asJava(g.allMemberMetadata())) {
            assignment.put(m.memberId(), m.assignment());
        }
        ObjectNode offsets = out.putObject("offsets");
        CollectionConverters.asJava(g.allOffsets()).forEach((tp, o) ->
            offsets.put(tp.topic() + "-" + tp.partition(), o.offset()));
        return out;
    }

    @Override
    public void close() {
        finishLoading();
        timer.close();
    }
}

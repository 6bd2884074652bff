package groupspec.driver;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.coordinator.common.runtime.PartitionWriter;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.VerificationGuard;

/**
 * The offsets partition as Kafka 4.0's coordinator runtime writes to it, in place of
 * kafka.coordinator.group.CoordinatorPartitionWriter on a ReplicaManager.  That writer appends with acks=1 and
 * answers at once: the leader's log takes the batch (the log end offset after it comes back) or refuses it (the
 * error is thrown); the runtime then waits for the high watermark to pass the batch before it answers the
 * requests that wrote it.  So, on {@link RecordLog} through {@link Appends}:
 * <ul>
 * <li>{@code fail_next_append: E}: the append throws E's exception and nothing reaches the log;</li>
 * <li>otherwise the batch is in the log, and the high watermark passes it at once, inside the append, as on a
 *     broker whose partition has no replica but the leader (Partition.appendRecordsToLeader increments the
 *     high watermark, and its listeners hear of it, before the append returns): the contract's "appends
 *     complete at once".  For an append made while the storage holds, the high watermark passes it when a
 *     {@code complete: NONE} step reaches it.  The high watermark only moves forward: a batch behind a held
 *     one waits for it.</li>
 * </ul>
 * The runtime's listener only enqueues an event (at the front); the processor runs it when the write that
 * made the batch is done, so the requests that wrote it are answered then.
 */
final class OffsetsWriter implements PartitionWriter {

    /** One batch in the log not yet under the high watermark. */
    private static final class Batch {
        final long end;
        boolean released;

        Batch(long end, boolean released) {
            this.end = end;
            this.released = released;
        }
    }

    /** The offsets topic's config on a broker with defaults (max.message.bytes bounds the runtime's batches). */
    private static final LogConfig LOG_CONFIG = new LogConfig(Map.of());

    private final RecordLog log;
    private final Appends appends;
    private final DirectEvents events;
    private final List<Listener> listeners = new ArrayList<>();
    private final ArrayDeque<Batch> uncommitted = new ArrayDeque<>();
    private long highWatermark;
    private long told;

    OffsetsWriter(RecordLog log, Appends appends, DirectEvents events) {
        this.log = log;
        this.appends = appends;
        this.events = events;
    }

    long highWatermark() {
        return highWatermark;
    }

    @Override
    public void registerListener(TopicPartition tp, Listener listener) {
        listeners.add(listener);
    }

    @Override
    public void deregisterListener(TopicPartition tp, Listener listener) {
        listeners.remove(listener);
    }

    @Override
    public LogConfig config(TopicPartition tp) {
        return LOG_CONFIG;
    }

    @Override
    public long append(TopicPartition tp, VerificationGuard verificationGuard, MemoryRecords records)
        throws KafkaException {
        Errors failure = appends.takeFailure();
        if (failure != null && failure != Errors.NONE) {
            // the leader's log refuses the write: CoordinatorPartitionWriter throws the append's error
            throw failure.exception();
        }
        long end = log.append(records);
        Batch batch = new Batch(end, !appends.holding());
        uncommitted.add(batch);
        if (!batch.released) {
            appends.park(error -> release(batch, error));
        }
        moveHighWatermark();
        return end;
    }

    /** A held append's {@code complete} step. */
    private void release(Batch batch, Errors error) {
        if (error != Errors.NONE) {
            throw new Main.Refused("unsupported", "storage complete: " + error.name() + " on an append already "
                + "written: Kafka 4.0's coordinator learns of an append's failure only synchronously "
                + "(kafka.coordinator.group.CoordinatorPartitionWriter.append writes with acks=1 and throws the "
                + "leader's error; CoordinatorRuntime.CoordinatorContext.flushCurrentBatch then fails the batch); "
                + "a batch in the log is committed by the high watermark, or failed only by the partition's "
                + "unload (NOT_COORDINATOR, CoordinatorContext.unload) or the write timeout "
                + "(CoordinatorRuntime.OperationTimeout), never with an error of its own");
        }
        batch.released = true;
        moveHighWatermark();
        events.drain();
    }

    /**
     * The high watermark moves over every released batch at the head of the log; the listeners (the runtime's
     * HighWatermarkListener of a loaded coordinator) hear of it, as Partition tells them on a broker.
     */
    private void moveHighWatermark() {
        while (!uncommitted.isEmpty() && uncommitted.peek().released) {
            highWatermark = uncommitted.poll().end;
        }
        if (highWatermark > told) {
            told = highWatermark;
            for (Listener l : new ArrayList<>(listeners)) {
                l.onHighWatermarkUpdated(Java40.OFFSETS, highWatermark);
            }
        }
    }

    /**
     * The partition moved away: what it had not committed is gone with it (the runtime failed those writes as it
     * unloaded), so the log keeps what is under the high watermark, as the contract's failed appends are not in
     * it, and no held append is left to complete.
     */
    void abandon() {
        log.truncate(highWatermark);
        uncommitted.clear();
        appends.dropAll();
    }

    /** Transactional offset commits are not among the requests the driver sends. */
    @Override
    public CompletableFuture<VerificationGuard> maybeStartTransactionVerification(
        TopicPartition tp, String transactionalId, long producerId, short producerEpoch, short apiVersion) {
        return CompletableFuture.failedFuture(new UnsupportedOperationException(
            "the groupspec driver sends no TxnOffsetCommit, so verifies no transaction"));
    }

    /** Only the share coordinator deletes records from its partition; the group coordinator never does. */
    @Override
    public CompletableFuture<Void> deleteRecords(TopicPartition tp, long deleteBeforeOffset) {
        return CompletableFuture.failedFuture(new UnsupportedOperationException(
            "the group coordinator deletes no records"));
    }
}

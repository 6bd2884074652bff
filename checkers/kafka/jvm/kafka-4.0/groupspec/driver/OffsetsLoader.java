package groupspec.driver;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.NotLeaderOrFollowerException;
import org.apache.kafka.common.record.ControlRecordType;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.MutableRecordBatch;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.requests.TransactionResult;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.coordinator.common.runtime.CoordinatorLoader;
import org.apache.kafka.coordinator.common.runtime.CoordinatorPlayback;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.Deserializer;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The coordinator runtime's loader, in place of kafka.coordinator.group.CoordinatorLoaderImpl (which reads the
 * partition's log on a scheduler thread of its own): it replays {@link RecordLog} into the coordinator the way
 * that class does (every record of every batch to the log end, deserialized with GroupCoordinatorRecordSerde;
 * the last written offset moved batch by batch, the committed offset to the high watermark once the read
 * reaches it), and answers the runtime's future only when the scenario says: after {@link #hold} a load waits
 * for {@link #finish} (the runtime stays LOADING meanwhile), otherwise it runs to its end at once.
 */
final class OffsetsLoader implements CoordinatorLoader<CoordinatorRecord> {

    private static final Logger LOG = LoggerFactory.getLogger(OffsetsLoader.class);
    /** CoordinatorLoaderImpl.DEFAULT_COMMIT_INTERVAL_OFFSETS: how far a long load goes between commits. */
    private static final long COMMIT_INTERVAL_OFFSETS = 16384L;

    private record Load(TopicPartition tp, CoordinatorPlayback<CoordinatorRecord> playback,
                        CompletableFuture<LoadSummary> future, long startMs) {
    }

    private final RecordLog log;
    private final OffsetsWriter writer;
    private final Time time;
    private final GroupCoordinatorRecordSerde serde = new GroupCoordinatorRecordSerde();
    private boolean hold;
    private Load pending;

    OffsetsLoader(RecordLog log, OffsetsWriter writer, Time time) {
        this.log = log;
        this.writer = writer;
        this.time = time;
    }

    @Override
    public CompletableFuture<LoadSummary> load(TopicPartition tp, CoordinatorPlayback<CoordinatorRecord> playback) {
        Load l = new Load(tp, playback, new CompletableFuture<>(), time.milliseconds());
        if (hold) {
            pending = l;
        } else {
            replay(l);
        }
        return l.future;
    }

    /** The next load waits for {@link #finish}. */
    void hold() {
        hold = true;
    }

    /** A load has begun and waits. */
    boolean waiting() {
        return pending != null;
    }

    /** The waiting load reads the log to its end, and its future completes (the runtime goes on from there). */
    void finish() {
        hold = false;
        Load l = pending;
        pending = null;
        if (l != null) {
            replay(l);
        }
    }

    /** The partition moved away during a load: CoordinatorLoaderImpl then finds no log end and fails the load. */
    void abandon() {
        fail(l -> new NotLeaderOrFollowerException("Stopped loading records from " + l.tp
            + " because the partition is not online or is no longer the leader."));
    }

    private void fail(java.util.function.Function<Load, Throwable> error) {
        hold = false;
        Load l = pending;
        pending = null;
        if (l != null) {
            l.future.completeExceptionally(error.apply(l));
        }
    }

    private void replay(Load l) {
        try {
            long highWatermark = writer.highWatermark();
            long lastCommitted = -1L;
            long records = 0;
            long bytes = 0;
            for (MemoryRecords part : log.all()) {
                bytes += part.sizeInBytes();
                for (MutableRecordBatch batch : part.batches()) {
                    if (batch.isControlBatch()) {
                        for (Record r : batch) {
                            ControlRecordType type = ControlRecordType.parse(r.key());
                            if (type == ControlRecordType.COMMIT || type == ControlRecordType.ABORT) {
                                l.playback.replayEndTransactionMarker(batch.producerId(), batch.producerEpoch(),
                                    type == ControlRecordType.COMMIT ? TransactionResult.COMMIT : TransactionResult.ABORT);
                            }
                        }
                    } else {
                        for (Record r : batch) {
                            records++;
                            CoordinatorRecord record;
                            try {
                                record = serde.deserialize(copy(r.key()), copy(r.value()));
                            } catch (Deserializer.UnknownRecordTypeException e) {
                                LOG.warn("Unknown record type {} while loading {}; ignored.", e.unknownType(), l.tp);
                                continue;
                            }
                            l.playback.replay(r.offset(), batch.producerId(), batch.producerEpoch(), record);
                        }
                    }
                    long current = batch.nextOffset();
                    if (current >= highWatermark) {
                        l.playback.updateLastWrittenOffset(current);
                        if (highWatermark > lastCommitted) {
                            l.playback.updateLastCommittedOffset(highWatermark);
                            lastCommitted = highWatermark;
                        }
                    } else if (current - lastCommitted >= COMMIT_INTERVAL_OFFSETS) {
                        l.playback.updateLastWrittenOffset(current);
                        l.playback.updateLastCommittedOffset(current);
                        lastCommitted = current;
                    }
                }
            }
            l.future.complete(new LoadSummary(l.startMs, time.milliseconds(), 0, records, bytes));
        } catch (Throwable t) {
            l.future.completeExceptionally(t);
        }
    }

    private static ByteBuffer copy(ByteBuffer b) {
        return b == null ? null : b.duplicate();
    }

    /** The runtime closes (the session ends): a load under way fails as CoordinatorLoaderImpl's does when closed. */
    @Override
    public void close() {
        fail(l -> new RuntimeException("Coordinator loader is closed."));
    }
}

package groupspec.driver;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.MutableRecordBatch;

/**
 * The offsets partition's log, in memory: the batches a coordinator appended (and that were not failed),
 * given offsets as a leader's log gives them, read back in full when a coordinator loads the partition.
 */
final class RecordLog {

    private final List<MemoryRecords> batches = new ArrayList<>();
    private long endOffset;

    /** Append a coordinator's records (built at offset 0, as both coordinators build them); the new end. */
    long append(MemoryRecords records) {
        ByteBuffer copy = ByteBuffer.allocate(records.sizeInBytes());
        copy.put(records.buffer().duplicate());
        copy.flip();
        MemoryRecords placed = MemoryRecords.readableRecords(copy);
        for (MutableRecordBatch batch : placed.batches()) {
            long count = batch.lastOffset() - batch.baseOffset() + 1;
            batch.setLastOffset(endOffset + count - 1);
            endOffset += count;
        }
        batches.add(placed);
        return endOffset;
    }

    /** Drop every batch at or after {@code offset} (a batch boundary): the log a new leader keeps. */
    void truncate(long offset) {
        batches.removeIf(r -> r.batches().iterator().next().baseOffset() >= offset);
        endOffset = Math.min(endOffset, offset);
    }

    long endOffset() {
        return endOffset;
    }

    /** Every batch at or after {@code offset}, as one MemoryRecords. */
    MemoryRecords readFrom(long offset) {
        List<ByteBuffer> parts = new ArrayList<>();
        int size = 0;
        for (MemoryRecords r : batches) {
            for (MutableRecordBatch b : r.batches()) {
                if (b.lastOffset() >= offset) {
                    ByteBuffer one = r.buffer().duplicate();
                    parts.add(one);
                    size += one.remaining();
                    break;   // the MemoryRecords of one append: its batches go together
                }
            }
        }
        ByteBuffer all = ByteBuffer.allocate(size);
        parts.forEach(all::put);
        all.flip();
        return MemoryRecords.readableRecords(all);
    }

    /** Every batch, oldest first. */
    Iterable<MemoryRecords> all() {
        return batches;
    }
}

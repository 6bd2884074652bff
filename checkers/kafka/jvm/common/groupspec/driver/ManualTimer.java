package groupspec.driver;

import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;

import org.apache.kafka.server.util.timer.Timer;
import org.apache.kafka.server.util.timer.TimerTask;
import org.apache.kafka.server.util.timer.TimerTaskEntry;

/**
 * Kafka's {@link Timer} (the one its purgatories and its coordinator runtime schedule on), fired only by
 * {@link #advance}, as the scenario contract's {@code advance_ms} says: every task due within the step
 * fires, earliest deadline first, the clock set to its deadline; tasks due at the same instant fire in the
 * order they were added; a task added while firing fires in the same step if it falls due within it; a task
 * added with a deadline of now waits for the next advance.  (Kafka's own timing wheel runs an expired task
 * at once on its executor thread and orders nothing within a tick; the contract fixes one order.)
 */
public final class ManualTimer implements Timer {

    private record Due(TimerTaskEntry entry, long seq) implements Comparable<Due> {
        @Override
        public int compareTo(Due o) {
            int c = Long.compare(entry.expirationMs, o.entry.expirationMs);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    private final ManualTime time;
    private final PriorityQueue<Due> queue = new PriorityQueue<>();
    private long seq;
    /** Firings at one instant beyond which a timer that keeps re-arming itself at once is a livelock. */
    private static final int MAX_FIRINGS_AT_ONE_INSTANT = 10_000;

    public ManualTimer(ManualTime time) {
        this.time = time;
    }

    public ManualTime time() {
        return time;
    }

    @Override
    public void add(TimerTask task) {
        queue.add(new Due(new TimerTaskEntry(task, time.milliseconds() + task.delayMs), seq++));
    }

    /** Move the clock forward by {@code ms}, firing what falls due on the way. */
    public void advance(long ms) {
        long end = time.milliseconds() + ms;
        int firings = 0;
        long instant = Long.MIN_VALUE;
        while (!queue.isEmpty() && queue.peek().entry.expirationMs <= end) {
            Due due = queue.poll();
            if (due.entry.cancelled()) {
                continue;
            }
            long at = Math.max(due.entry.expirationMs, time.milliseconds());
            if (at != instant) {
                instant = at;
                firings = 0;
            } else if (++firings > MAX_FIRINGS_AT_ONE_INSTANT) {
                throw new IllegalStateException("timers re-armed themselves to fire at once more than "
                    + MAX_FIRINGS_AT_ONE_INSTANT + " times at " + at + " ms");
            }
            time.set(at);
            due.entry.timerTask.run();
        }
        time.set(end);
    }

    /** The deadlines of the tasks still armed (for a driver that must tell whether one is due). */
    public List<Long> deadlines() {
        List<Long> out = new ArrayList<>();
        for (Due d : queue) {
            if (!d.entry.cancelled()) {
                out.add(d.entry.expirationMs);
            }
        }
        return out;
    }

    @Override
    public boolean advanceClock(long timeoutMs) {
        // Kafka's own reapers call this with their poll interval; the driver alone moves this clock.
        return false;
    }

    @Override
    public int size() {
        int n = 0;
        for (Due d : queue) {
            if (!d.entry.cancelled()) {
                n++;
            }
        }
        return n;
    }

    @Override
    public void close() {
        queue.clear();
    }
}

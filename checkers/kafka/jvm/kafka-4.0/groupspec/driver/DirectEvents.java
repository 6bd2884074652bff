package groupspec.driver;

import java.util.ArrayDeque;
import java.util.concurrent.RejectedExecutionException;

import org.apache.kafka.common.utils.Time;
import org.apache.kafka.coordinator.common.runtime.CoordinatorEvent;
import org.apache.kafka.coordinator.common.runtime.CoordinatorEventProcessor;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRuntimeMetrics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The coordinator runtime's event processor, run in the driver's one thread: an event enqueued from outside the
 * runtime (a request, a timer that fires, the high watermark moving) runs at once, before enqueue returns.  An
 * event enqueued while another runs (a load that completes inside its Load event, say) waits in the queue, at
 * the end or, from enqueueFirst, at the front, and runs when the running one is done, as Kafka's
 * MultiThreadedEventProcessor never runs two events of one partition at a time.  Kafka's processor runs events
 * on its threads whenever it gets to them; a scenario needs each step's effects done when the step is.
 */
final class DirectEvents implements CoordinatorEventProcessor {

    private static final Logger LOG = LoggerFactory.getLogger(DirectEvents.class);

    private final ArrayDeque<CoordinatorEvent> queue = new ArrayDeque<>();
    private final Time time;
    private final CoordinatorRuntimeMetrics metrics;
    private boolean running;
    private boolean closed;

    DirectEvents(Time time, CoordinatorRuntimeMetrics metrics) {
        this.time = time;
        this.metrics = metrics;
        metrics.registerEventQueueSizeGauge(queue::size);
    }

    @Override
    public void enqueueLast(CoordinatorEvent event) throws RejectedExecutionException {
        refuseIfClosed();
        queue.addLast(event);
        drain();
    }

    @Override
    public void enqueueFirst(CoordinatorEvent event) throws RejectedExecutionException {
        refuseIfClosed();
        queue.addFirst(event);
        drain();
    }

    private void refuseIfClosed() {
        if (closed) {
            // what MultiThreadedEventProcessor throws once closed; the runtime turns it into NOT_COORDINATOR
            throw new RejectedExecutionException("EventProcessor is closed.");
        }
    }

    /** Run every queued event (and what they enqueue); nothing if an event is running already. */
    void drain() {
        if (running) {
            return;
        }
        running = true;
        try {
            CoordinatorEvent event;
            while ((event = queue.pollFirst()) != null) {
                run(event);
            }
        } finally {
            running = false;
        }
    }

    /** As MultiThreadedEventProcessor's thread runs one: what the event throws completes it. */
    private void run(CoordinatorEvent event) {
        long dequeuedMs = time.milliseconds();
        metrics.recordEventQueueTime(dequeuedMs - event.createdTimeMs());
        try {
            event.run();
            metrics.recordEventProcessingTime(time.milliseconds() - dequeuedMs);
        } catch (Throwable t) {
            LOG.error("Failed to run event {} due to: {}.", event, t.getMessage(), t);
            event.complete(t);
        }
    }

    /** Closed, what is still queued is rejected (as MultiThreadedEventProcessor drains on shutdown). */
    @Override
    public void close() {
        closed = true;
        CoordinatorEvent event;
        while ((event = queue.pollFirst()) != null) {
            event.complete(new RejectedExecutionException("EventProcessor is closed."));
        }
    }
}

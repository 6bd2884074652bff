package groupspec.driver;

import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import org.apache.kafka.common.utils.Time;

/** Kafka's {@link Time}, moved only by the driver: a coordinator never sees the wall clock. */
public final class ManualTime implements Time {

    private volatile long nowMs;

    @Override
    public long milliseconds() {
        return nowMs;
    }

    @Override
    public long nanoseconds() {
        return TimeUnit.MILLISECONDS.toNanos(nowMs);
    }

    @Override
    public void sleep(long ms) {
        nowMs += ms;
    }

    /** Nothing the coordinators call waits on it in a driver's single thread. */
    @Override
    public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
        if (!condition.get()) {
            throw new IllegalStateException("a coordinator waited on a condition the driver cannot bring about");
        }
    }

    void set(long ms) {
        nowMs = ms;
    }
}

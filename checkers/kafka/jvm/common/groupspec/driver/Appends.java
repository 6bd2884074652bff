package groupspec.driver;

import java.util.ArrayDeque;
import java.util.function.Consumer;

import org.apache.kafka.common.protocol.Errors;

/**
 * The storage steps of the scenario contract, for a coordinator's appends to its log: {@code hold} parks
 * the appends that follow, {@code complete} completes the oldest parked one with a result, and
 * {@code fail_next_append} fails the next one; otherwise an append completes at once.  Each target turns
 * a completion into what its Kafka expects (a ReplicaManager callback in 3.9, the high watermark in 4.0).
 */
public final class Appends {

    private boolean hold;
    private Errors failNext;
    private final ArrayDeque<Consumer<Errors>> held = new ArrayDeque<>();

    public void hold(boolean hold) {
        this.hold = hold;
    }

    public void failNext(Errors error) {
        this.failNext = error;
    }

    /**
     * The failure an append meets now (and the failure is used up), or null.  While appends are held there
     * is none: a held append is parked whatever failure waits, and the failure goes to the next append not
     * held (the runtime coordinator's reading of the contract, which the harness compares against).
     */
    public Errors takeFailure() {
        if (hold) {
            return null;
        }
        Errors e = failNext;
        failNext = null;
        return e;
    }

    public boolean holding() {
        return hold;
    }

    /** Park an append; {@code done} is told its result when a {@code complete} step reaches it. */
    public void park(Consumer<Errors> done) {
        held.add(done);
    }

    /** Complete the oldest parked append; false if none is parked. */
    public boolean complete(Errors error) {
        Consumer<Errors> done = held.poll();
        if (done == null) {
            return false;
        }
        done.accept(error);
        return true;
    }

    public boolean anyHeld() {
        return !held.isEmpty();
    }

    /** A failure waits for the next append. */
    public boolean failing() {
        return failNext != null;
    }

    /** The partition moved away and took the parked appends with it: none will complete. */
    public void dropAll() {
        held.clear();
    }

    /** The partition moved away: every parked append fails with {@code error}, oldest first. */
    public void failAll(Errors error) {
        while (complete(error)) {
            // each completion runs the coordinator's callback for that append
        }
    }
}

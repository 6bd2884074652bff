package groupspec.driver;

import java.lang.reflect.Field;
import java.util.Set;

/** What every target shares about Kafka itself: the config keys that are Kafka's, and reading a private field. */
final class Kafka {

    /**
     * The scenario config keys that are Kafka broker configs, passed to the coordinator as they are.  (The
     * contract's group.new.member.join.timeout.ms is a constant in both coordinators, NewMemberJoinTimeoutMs
     * and CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS: the Python side refuses another value for a Kafka target.)
     */
    static final Set<String> CONFIG_KEYS = Set.of("group.min.session.timeout.ms", "group.max.session.timeout.ms",
        "group.max.size", "group.initial.rebalance.delay.ms", "offsets.retention.minutes");

    private Kafka() {
    }

    /** A private field of Kafka's, for a snapshot of what no public method shows (pending members, say). */
    @SuppressWarnings("unchecked")
    static <T> T field(Object owner, String name) {
        for (Class<?> c = owner.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return (T) f.get(owner);
            } catch (NoSuchFieldException e) {
                // look in the superclass
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        }
        throw new IllegalStateException("no field " + name + " in " + owner.getClass().getName());
    }
}

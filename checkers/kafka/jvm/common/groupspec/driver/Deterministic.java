package groupspec.driver;

import java.lang.reflect.Field;
import java.security.SecureRandom;
import java.util.Random;
import java.util.UUID;

/**
 * Member ids are {@code clientId-UUID} with {@link UUID#randomUUID()} in both of Kafka's coordinators, and
 * which member a group makes leader after its leader leaves is the first of a HashMap of those ids.  So
 * that the same steps give the same answers on every run, the JDK's generator behind randomUUID is
 * replaced, once and before any id is made, by one the driver reseeds for every coordinator it makes.
 */
final class Deterministic {

    private static final class Seeded extends SecureRandom {
        private static final long serialVersionUID = 1L;
        private transient Random random = new Random(0);

        @Override
        public synchronized void nextBytes(byte[] bytes) {
            random.nextBytes(bytes);
        }

        synchronized void reseed(long seed) {
            random = new Random(seed);
        }
    }

    private static Seeded seeded;

    private Deterministic() {
    }

    /** Put the seeded generator in the JDK's place (UUID.Holder.numberGenerator, a static final). */
    static void install() throws ReflectiveOperationException {
        Field unsafeField = Class.forName("sun.misc.Unsafe").getDeclaredField("theUnsafe");
        unsafeField.setAccessible(true);
        sun.misc.Unsafe unsafe = (sun.misc.Unsafe) unsafeField.get(null);
        Field holder = Class.forName("java.util.UUID$Holder").getDeclaredField("numberGenerator");
        seeded = new Seeded();
        @SuppressWarnings("deprecation")
        Object base = unsafe.staticFieldBase(holder);
        @SuppressWarnings("deprecation")
        long offset = unsafe.staticFieldOffset(holder);
        unsafe.putObject(base, offset, seeded);
        seeded.reseed(7);
        UUID first = UUID.randomUUID();
        seeded.reseed(7);
        if (!UUID.randomUUID().equals(first)) {
            throw new IllegalStateException("the JDK's UUID generator could not be replaced");
        }
    }

    /** Every coordinator starts from the same ids. */
    static void reseed(long seed) {
        seeded.reseed(seed);
    }
}

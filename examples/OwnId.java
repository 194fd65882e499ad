import java.util.concurrent.CountDownLatch;

/**
 * A thread whose class overrides getId() (it claims to be thread 1, main's ID) holds a
 * monitor until another thread is BLOCKED on it, K times (args: K, default 3). On JDK 17,
 * ThreadInfo takes a thread's ID from getId(): a tracer that trusted it would name main as
 * the owner. Prints "monitor MONITOR OWNER" (identity hash codes, 8 hex digits) per
 * contention.
 */
public class OwnId {
    static String hex(Object o) {
        return String.format("%08X", System.identityHashCode(o));
    }

    /** Lies about its ID. */
    static final class Liar extends Thread {
        Liar(Runnable r, String name) {
            super(r, name);
        }

        @Override
        public long getId() {
            return 1;
        }
    }

    public static void main(String[] args) throws InterruptedException {
        int k = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        for (int i = 0; i < k; i++) {
            final Object monitor = new Object();
            final CountDownLatch held = new CountDownLatch(1);
            final Thread[] contender = new Thread[1];
            contender[0] = new Thread(new Runnable() {
                public void run() {
                    try {
                        held.await();
                    } catch (InterruptedException e) {
                        throw new RuntimeException(e);
                    }
                    synchronized (monitor) {
                        monitor.hashCode();
                    }
                }
            }, "contender-" + i);
            Thread holder = new Liar(new Runnable() {
                public void run() {
                    synchronized (monitor) {
                        held.countDown();
                        while (contender[0].getState() != Thread.State.BLOCKED) {
                            Thread.yield();
                        }
                        long until = System.nanoTime() + 200_000_000L;
                        while (System.nanoTime() < until) {
                            Thread.yield();
                        }
                    }
                }
            }, "liar-" + i);
            holder.start();
            contender[0].start();
            holder.join();
            contender[0].join();
            System.out.println("monitor " + hex(monitor) + " " + hex(holder));
        }
    }
}

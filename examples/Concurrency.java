import java.util.concurrent.CountDownLatch;
import java.util.function.BiFunction;

/**
 * Concurrency events the test of format=orca counts (tests/orca.rs): a producer and a
 * consumer that wait and notify on one lock, threads started and joined, sleeps, and a
 * monitor contended K times (a thread blocks on a monitor that another holds until it sees
 * the first BLOCKED). The program counts what it does itself and prints it, with the identity
 * hash codes of its threads and monitors.
 */
public class Concurrency {
    static final Object LOCK = new Object();
    static boolean full;
    static int waits, notifies, notifyAlls, starts, joins, sleeps;

    static void produce(int items) {
        try {
            for (int i = 0; i < items; i++) {
                synchronized (LOCK) {
                    while (full) {
                        waits++;
                        LOCK.wait();
                    }
                    full = true;
                    LOCK.notify();
                    notifies++;
                }
            }
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    static void consume(int items) {
        try {
            for (int i = 0; i < items; i++) {
                synchronized (LOCK) {
                    while (!full) {
                        waits++;
                        LOCK.wait();
                    }
                    full = false;
                    LOCK.notifyAll();
                    notifyAlls++;
                }
            }
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    static void start(Thread t) {
        t.start();
        starts++;
        System.out.println("thread " + hex(t) + " " + t.getName());
    }

    static void join(Thread t) throws InterruptedException {
        t.join();
        joins++;
    }

    static String hex(Object o) {
        return String.format("%08X", System.identityHashCode(o));
    }

    /** The monitors contended for: a class of their own, so that a trace can tell them. */
    static final class Monitor {
    }

    /** One contention: `holder` holds `monitor` until `contender` is BLOCKED on it. */
    static void contend(int i) throws InterruptedException {
        contend(i, Thread::new, "holder-", 20_000_000L);
    }

    /**
     * One contention, the holder made by `threads` and named `holderName` + i, held `holdNanos`
     * after the contender is BLOCKED; prints "monitor MONITOR HOLDER".
     */
    static void contend(int i, BiFunction<Runnable, String, Thread> threads, String holderName,
            long holdNanos) throws InterruptedException {
        Monitor monitor = new Monitor();
        CountDownLatch held = new CountDownLatch(1);
        Thread[] contender = new Thread[1];
        contender[0] = new Thread(() -> {
            try {
                held.await();
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
            synchronized (monitor) {
                monitor.hashCode();
            }
        }, "contender-" + i);
        Thread holder = threads.apply(() -> {
            synchronized (monitor) {
                held.countDown();
                while (contender[0].getState() != Thread.State.BLOCKED) {
                    Thread.yield();
                }
                // Held a little longer, so that the blocked thread's event finds its owner.
                long until = System.nanoTime() + holdNanos;
                while (System.nanoTime() < until) {
                    Thread.yield();
                }
            }
        }, holderName + i);
        start(holder);
        start(contender[0]);
        join(holder);
        join(contender[0]);
        System.out.println("monitor " + hex(monitor) + " " + hex(holder));
    }

    /** A thread started, joined and put to sleep through its own class's name. */
    static class Sleeper extends Thread {
        Sleeper() {
            super("sleeper");
        }

        @Override
        public void run() {
            try {
                sleep(1);
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }
    }

    /**
     * A thread whose own sleep hides Thread's: its calls must stay its own (it is never run;
     * the rewriter's test reads its class).
     */
    static class Hider extends Thread {
        static int slept;

        public static void sleep(long millis) {
            slept += (int) millis;
        }

        @Override
        public void run() {
            sleep(1);
        }
    }

    public static void main(String[] args) throws Exception {
        int items = args.length > 0 ? Integer.parseInt(args[0]) : 200;
        int contentions = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        Thread producer = new Thread(() -> produce(items), "producer");
        Thread consumer = new Thread(() -> consume(items), "consumer, the second");
        start(producer);
        start(consumer);
        join(producer);
        join(consumer);
        for (int i = 0; i < contentions; i++) {
            contend(i);
        }
        Sleeper sleeper = new Sleeper();
        sleeper.start();
        System.out.println("thread " + hex(sleeper) + " " + sleeper.getName());
        sleeper.join();
        starts++;
        joins++;
        sleeps++;
        for (int i = 0; i < 3; i++) {
            Thread.sleep(1);
            sleeps++;
        }
        Thread.sleep(2, 500);
        sleeps++;
        System.out.println("counts waits=" + waits + " notifies=" + notifies + " notifyAlls="
                + notifyAlls + " starts=" + starts + " joins=" + joins + " sleeps=" + sleeps
                + " contended=" + contentions);
    }
}

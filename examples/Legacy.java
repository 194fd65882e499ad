import java.util.concurrent.CountDownLatch;

/**
 * What a legacy JVMPI agent must see exactly (tests/jvmpi.rs, with tests/jvmpi/counter.c):
 * WORK calls of work(), NODES Node objects each touched once and dropped before a full
 * collection, one Node[] array, a thread "legacy-worker" that calls spin() SPINS times, WAITS
 * timed waits on a lock, CONTENTIONS forced contentions on Gate objects (the holder keeps the
 * monitor until the contender is BLOCKED), a hot method for the JIT, and a SIGQUIT. The lines
 * marked LINE: are the ones the agent's call traces must name.
 */
public class Legacy {
    static final int WORK = 1000, NODES = 500, SPINS = 77, WAITS = 3, CONTENTIONS = 2;
    static long sink;

    static final class Node {
        int value;

        void touch() {
            value++;
        }
    }

    static final class Gate {
    }

    /** Live at the SIGQUIT: KEPT objects, each Keep n = its index and next = the one after. */
    static final class Keep {
        int n;
        Keep next;
    }

    static final int KEPT_COUNT = 10;
    static final Keep[] KEPT = new Keep[KEPT_COUNT];

    static int work(int i) {
        return i * 3; // LINE:work
    }

    static void spin(int i) {
        sink += i;
    }

    static int hot(int i) {
        return (i ^ 0x5bd1e995) * 31;
    }

    /** Loads Fib in a class loader of its own and drops both: one class to unload. */
    static void loadAndDrop() throws Exception {
        java.net.URL here = Legacy.class.getProtectionDomain().getCodeSource().getLocation();
        try (java.net.URLClassLoader loader = new java.net.URLClassLoader(new java.net.URL[] {here}, null)) {
            Class.forName("Fib", true, loader).getName();
        }
    }

    static void contend() throws InterruptedException {
        Gate gate = new Gate();
        CountDownLatch held = new CountDownLatch(1);
        Thread contender = new Thread(() -> {
            try {
                held.await();
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
            synchronized (gate) {
                gate.hashCode();
            }
        }, "legacy-contender");
        Thread holder = new Thread(() -> {
            synchronized (gate) {
                held.countDown();
                while (contender.getState() != Thread.State.BLOCKED) {
                    Thread.yield();
                }
            }
        }, "legacy-holder");
        contender.start();
        holder.start();
        holder.join();
        contender.join();
    }

    public static void main(String[] args) throws Exception {
        int total = 0;
        for (int i = 0; i < WORK; i++) {
            total += work(i); // LINE:call
        }
        for (int i = 0; i < NODES; i++) {
            Node n = new Node();
            n.touch();
        }
        Node[] few = new Node[3];
        few[0] = null;
        Thread worker = new Thread(() -> {
            for (int i = 0; i < SPINS; i++) {
                spin(i);
            }
        }, "legacy-worker");
        worker.start();
        worker.join();
        Object lock = new Object();
        for (int i = 0; i < WAITS; i++) {
            synchronized (lock) {
                lock.wait(20);
            }
        }
        for (int i = 0; i < CONTENTIONS; i++) {
            contend();
        }
        long h = 0;
        for (int i = 0; i < 200_000; i++) {
            h += hot(i);
        }
        loadAndDrop();
        System.gc();
        for (int i = KEPT_COUNT - 1; i >= 0; i--) {
            KEPT[i] = new Keep();
            KEPT[i].n = i;
            KEPT[i].next = i + 1 < KEPT_COUNT ? KEPT[i + 1] : null;
        }
        // The agent dumps the heap and the monitors at the SIGQUIT, while main waits on KEPT;
        // it wakes main when done (or a JVM without it, after 30 s).
        synchronized (KEPT) {
            new ProcessBuilder("kill", "-QUIT", new java.io.File("/proc/self").getCanonicalFile().getName())
                    .inheritIO()
                    .start()
                    .waitFor();
            KEPT.wait(30_000);
        }
        System.out.println("work=" + WORK + " nodes=" + NODES + " spins=" + SPINS + " waits=" + WAITS
                + " contentions=" + CONTENTIONS + " total=" + total + " h=" + (h != 0));
    }
}

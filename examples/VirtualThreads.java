import java.lang.reflect.Method;
import java.util.concurrent.CountDownLatch;
import jlive.Jlive;

/**
 * Virtual threads vt-0..vt-(N-1) (JDK 21+; reached through reflection so that this compiles
 * for Java 8): vt-i calls step() 10*(i%10+1) times, sleeping after every 10 calls, so that it
 * leaves its carrier and comes back, often to another one (there are two). Prints the total to
 * stdout and to stderr how many virtual threads ran on more than one carrier (that depends on
 * the scheduler). Args: N (default 8), then "burst" to have every virtual thread call step()
 * five times and wait before a burst begins (jlive.Jlive, on the class path), and end it once
 * they are all done; one more, "spin", holds a carrier from before the burst until 100 ms after
 * it began, calling step() 1000 times once it has begun. Or "short" for short-lived
 * ones: vt-i calls step() twice with a yield
 * between (its cost is the virtual threads', not the calls'), and stderr says nothing of the
 * carriers. On a JDK without virtual threads: prints "no virtual threads", exits 2.
 */
public class VirtualThreads {
    static volatile boolean begun;
    static volatile boolean released;

    static int step(int x) {
        return x * 31 + 7;
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 8;
        final boolean burst = args.length > 1 && args[1].equals("burst");
        final boolean short_ = args.length > 1 && args[1].equals("short");
        // Two carriers whatever the machine (read when the first virtual thread is made).
        System.setProperty("jdk.virtualThreadScheduler.parallelism", "2");
        Method ofVirtual;
        try {
            ofVirtual = Thread.class.getMethod("ofVirtual");
        } catch (NoSuchMethodException e) {
            System.out.println("no virtual threads");
            System.exit(2);
            return;
        }
        Object builder = ofVirtual.invoke(null);
        Class<?> ofVirtualClass = Class.forName("java.lang.Thread$Builder$OfVirtual");
        ofVirtualClass.getMethod("name", String.class, long.class).invoke(builder, "vt-", 0L);
        Method unstarted = ofVirtualClass.getMethod("unstarted", Runnable.class);
        Thread[] threads = new Thread[n];
        final long[] sums = new long[n];
        final boolean[] moved = new boolean[n];
        final CountDownLatch waiting = new CountDownLatch(n);
        final CountDownLatch go = new CountDownLatch(1);
        for (int i = 0; i < n; i++) {
            final int id = i;
            threads[i] = (Thread) unstarted.invoke(builder, new Runnable() {
                public void run() {
                    if (short_) {
                        long sum = step(id);
                        Thread.yield();
                        sums[id] = sum + step(id);
                        return;
                    }
                    try {
                        if (burst) {
                            for (int k = 0; k < 5; k++) {
                                step(-1);
                            }
                            waiting.countDown();
                            go.await();
                        }
                        long sum = 0;
                        String first = carrier();
                        for (int k = 0; k < 10 * (id % 10 + 1); k++) {
                            sum += step(k);
                            if (k % 10 == 9) {
                                Thread.sleep(1);
                                moved[id] |= !carrier().equals(first);
                            }
                        }
                        sums[id] = sum;
                    } catch (InterruptedException e) {
                        throw new RuntimeException(e);
                    }
                }
            });
        }
        Thread spin = null;
        if (burst) {
            final CountDownLatch spinning = new CountDownLatch(1);
            ofVirtualClass.getMethod("name", String.class).invoke(builder, "spin");
            spin = (Thread) unstarted.invoke(builder, new Runnable() {
                public void run() {
                    spinning.countDown();
                    while (!begun) {
                        // spins
                    }
                    spinWork();
                    while (!released) {
                        // spins
                    }
                }
            });
            spin.start();
            spinning.await();
        }
        for (Thread t : threads) {
            t.start();
        }
        if (burst) {
            waiting.await();
            Jlive.beginBurst("virtual threads");
            begun = true;
            go.countDown();
            Thread.sleep(100);
            released = true;
            spin.join();
        }
        long total = 0;
        int movers = 0;
        for (int i = 0; i < n; i++) {
            threads[i].join();
            total += sums[i];
            movers += moved[i] ? 1 : 0;
        }
        if (burst) {
            Jlive.endBurst();
        }
        System.out.println("virtual threads=" + n + " total=" + total);
        if (!short_) {
            System.err.println("moved between carriers: " + movers);
        }
    }

    /** The spinning virtual thread's work once the burst has begun (a method of its own, not
     * compiled into its spinning loop). */
    static void spinWork() {
        for (int k = 0; k < 1000; k++) {
            step(-2);
        }
    }

    /** The carrier's name, from the virtual thread's description ("VirtualThread[#22,vt-0]/runnable@ForkJoinPool-1-worker-1"). */
    static String carrier() {
        String s = Thread.currentThread().toString();
        return s.substring(s.indexOf('@') + 1);
    }
}

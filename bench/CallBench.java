/**
 * The anchors' call-heavy microbenchmark: each iteration calls loop(), which calls mid(),
 * which calls leaf() — three traced calls. Prints ns per iteration of the timed phase.
 * Args: iterations (default 5,000,000), warm-up iterations (default 200,000).
 */
public class CallBench {
    static int sink;

    static int leaf(int x) {
        return x * 31 + 7;
    }

    static int mid(int x) {
        return leaf(x) ^ x;
    }

    static int loop(int x) {
        return mid(x) + 1;
    }

    static long run(int n) {
        long t0 = System.nanoTime();
        int s = 0;
        for (int i = 0; i < n; i++) {
            s += loop(i);
        }
        sink = s;
        return System.nanoTime() - t0;
    }

    public static void main(String[] args) throws InterruptedException {
        // -Dcallbench.wait=MS: on JDK 22 and later, first give libjlive's thread the time to
        // make its FFM downcalls (the application's calls reach the JNI natives meanwhile).
        Thread.sleep(Long.getLong("callbench.wait", 0));
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 5_000_000;
        int warm = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
        run(warm);
        long ns = run(n);
        System.out.printf("ns_per_iteration=%.2f%n", (double) ns / n);
    }
}

/**
 * The anchor "JNI static native + rdtsc + thread-local store" (bench/README.md): CallBench's three
 * calls, instrumented by hand with two static natives each (floor_natives.c) that read the
 * TSC and store a 32-byte record into a thread-local ring. Nothing is written out, so this is
 * the floor under any JNI-trampoline tracer on this machine. Prints ns per iteration.
 * Args: iterations (default 5,000,000), warm-up iterations (default 200,000); the library's
 * path comes in -Dfloor.lib=.
 */
public class FloorBench {
    static int sink;

    static native void enter(int key);

    static native void exit(int key);

    static int leaf(int x) {
        enter(3);
        int r = x * 31 + 7;
        exit(3);
        return r;
    }

    static int mid(int x) {
        enter(2);
        int r = leaf(x) ^ x;
        exit(2);
        return r;
    }

    static int loop(int x) {
        enter(1);
        int r = mid(x) + 1;
        exit(1);
        return r;
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

    public static void main(String[] args) {
        System.load(System.getProperty("floor.lib"));
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 5_000_000;
        int warm = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
        run(warm);
        long ns = run(n);
        System.out.printf("ns_per_iteration=%.2f%n", (double) ns / n);
    }
}

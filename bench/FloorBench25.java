import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Two floors on JDK 22 and later, beside FloorBench's JNI one: CallBench's three calls,
 * instrumented by hand.
 *
 * <ul>
 * <li>{@code ffm}: each call's entry and exit reach floor_natives.c's floor_enter/floor_exit
 * through FFM critical downcalls held in static finals (no JNI transition; C2 inlines the
 * downcall). The least a tracer that calls native code from Java reaches on JDK 25.
 * <li>{@code java}: no native code at all; each entry and exit stores System.nanoTime() and
 * a key into a ThreadLocal ring of longs. System.nanoTime() is also what JFR's counterTime
 * intrinsic reads unless a recording turned on the TSC.
 * </ul>
 *
 * Prints ns per iteration. Args: ffm|java, iterations, warm-up iterations; the library's path
 * comes in -Dfloor.lib=.
 */
public class FloorBench25 {
    static int sink;

    static final MethodHandle ENTER, EXIT;

    static {
        String lib = System.getProperty("floor.lib");
        if (lib == null) {
            ENTER = EXIT = null;
        } else {
            Linker linker = Linker.nativeLinker();
            SymbolLookup floor = SymbolLookup.libraryLookup(lib, Arena.global());
            FunctionDescriptor intToVoid = FunctionDescriptor.ofVoid(ValueLayout.JAVA_INT);
            Linker.Option critical = Linker.Option.critical(false);
            ENTER = linker.downcallHandle(floor.find("floor_enter").orElseThrow(), intToVoid, critical);
            EXIT = linker.downcallHandle(floor.find("floor_exit").orElseThrow(), intToVoid, critical);
        }
    }

    static void enter(int key) {
        try {
            ENTER.invokeExact(key);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    static void exit(int key) {
        try {
            EXIT.invokeExact(key);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

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

    /** The ring: slot 0 holds the next index; then (ticks, key) pairs. */
    static final ThreadLocal<long[]> RING = ThreadLocal.withInitial(() -> new long[1 + 2 * 65536]);

    static void put(long key) {
        long[] r = RING.get();
        int i = (int) r[0];
        if (i >= r.length - 2) {
            i = 1;
        }
        r[i] = System.nanoTime();
        r[i + 1] = key;
        r[0] = i + 2;
    }

    static int javaLeaf(int x) {
        put(6);
        int r = x * 31 + 7;
        put(7);
        return r;
    }

    static int javaMid(int x) {
        put(4);
        int r = javaLeaf(x) ^ x;
        put(5);
        return r;
    }

    static int javaLoop(int x) {
        put(2);
        int r = javaMid(x) + 1;
        put(3);
        return r;
    }

    static long run(boolean ffm, int n) {
        long t0 = System.nanoTime();
        int s = 0;
        if (ffm) {
            for (int i = 0; i < n; i++) {
                s += loop(i);
            }
        } else {
            for (int i = 0; i < n; i++) {
                s += javaLoop(i);
            }
        }
        sink = s;
        return System.nanoTime() - t0;
    }

    public static void main(String[] args) {
        boolean ffm = !args[0].equals("java");
        if (ffm && ENTER == null) {
            throw new IllegalArgumentException("ffm needs -Dfloor.lib=");
        }
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 5_000_000;
        int warm = args.length > 2 ? Integer.parseInt(args[2]) : 200_000;
        run(ffm, warm);
        long ns = run(ffm, n);
        System.out.printf("ns_per_iteration=%.2f%n", (double) ns / n);
    }
}

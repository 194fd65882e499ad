import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Two floors on JDK 22 and later, beside FloorBench's JNI one (a class of its own: this one
 * compiles with JDK 22+ only): CallBench's three calls, instrumented by hand with an entry and
 * an exit each.
 *
 * <ul>
 * <li>With {@code -Dfloor.lib=}: each entry and exit reaches floor_natives.c's
 * floor_enter/floor_exit through an FFM critical downcall held in a static final (no JNI
 * transition; C2 inlines the downcall). The least a tracer that calls native code reaches on
 * JDK 25.
 * <li>Without: no native code at all; each entry and exit stores System.nanoTime() and a key
 * into a ThreadLocal ring of longs. System.nanoTime() is also what JFR's counterTime intrinsic
 * reads unless a recording turned on the TSC.
 * </ul>
 *
 * The handles are static finals, null or not for the whole run, so C2 folds the choice away.
 * Prints ns per iteration. Args: iterations (default 5,000,000), warm-up iterations (default
 * 200,000).
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

    static void enter(int key) {
        if (ENTER == null) {
            put(key << 1);
            return;
        }
        try {
            ENTER.invokeExact(key);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    static void exit(int key) {
        if (EXIT == null) {
            put(key << 1 | 1);
            return;
        }
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
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 5_000_000;
        int warm = args.length > 1 ? Integer.parseInt(args[1]) : 200_000;
        run(warm);
        long ns = run(n);
        System.out.printf("ns_per_iteration=%.2f%n", (double) ns / n);
    }
}

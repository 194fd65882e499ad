package java.lang;

import jdk.internal.misc.Unsafe;
import jdk.internal.vm.annotation.DontInline;

/**
 * jlive's bytecode-instrumentation trampolines. libjlive.so defines this class in the
 * bootstrap loader at VM start (in java.lang, so that code of every module can call it). When
 * it is initialized, {@link #bind} (found by its JNI name in libjlive.so) binds the natives
 * with RegisterNatives to functions that read the tick counter and append a record, and
 * answers the address of libjlive's burst gate. Registering from here, with this class as the
 * caller, keeps HotSpot from warning about an agent rebinding a platform class's natives.
 * Instrumented methods call {@link #enter} first, {@link #exit} before every return and from
 * a catch-all handler that rethrows.
 *
 * <p>Each trampoline reads the gate before it calls its native: while no burst records, a
 * traced call from compiled code costs a Java call, a load and a branch each way (5-6 ns in
 * all, against 23 ns for two JNI calls). The trampolines are {@code @DontInline}: inlined
 * into every caller, they made C1's code half as big again; out of line, the gate's branch
 * lives in these six methods rather than in every caller. The gate is a hint: the natives
 * check the burst again, so a stale read only delays the moment recording starts or stops by
 * a call. It is read as a volatile, so that a compiled loop cannot hoist the read and miss a
 * burst that begins later.
 */
public final class JliveTrampoline {
    /** Gate bits (libjlive's capture::bci::GATE_*). */
    private static final int ENTRIES = 1, EXITS = 2, ALLOCATIONS = 4;

    private static final Unsafe U = Unsafe.getUnsafe();
    /** The gate's native address, from {@link #bind}. */
    private static final long GATE = bind();

    private JliveTrampoline() {
    }

    private static native long bind();

    /** Entry of the method whose key is given. */
    @DontInline
    public static void enter(int key) {
        if ((U.getIntVolatile(null, GATE) & ENTRIES) != 0) {
            enter0(key);
        }
    }

    /** Entry of an instance method, with its receiver (objects=on). */
    @DontInline
    public static void enterObject(Object receiver, int key) {
        if ((U.getIntVolatile(null, GATE) & ENTRIES) != 0) {
            enterObject0(receiver, key);
        }
    }

    /** Entry of a constructor whose receiver follows once super() returns (objects=on). */
    @DontInline
    public static void enterConstructor(int key) {
        if ((U.getIntVolatile(null, GATE) & ENTRIES) != 0) {
            enterConstructor0(key);
        }
    }

    /** The receiver of the constructor whose key is given, right after its super() call. */
    @DontInline
    public static void constructed(Object self, int key) {
        if ((U.getIntVolatile(null, GATE) & ENTRIES) != 0) {
            constructed0(self, key);
        }
    }

    /** Exit, normal or by exception, of the method whose key is given. */
    @DontInline
    public static void exit(int key) {
        if ((U.getIntVolatile(null, GATE) & EXITS) != 0) {
            exit0(key);
        }
    }

    /** An object or array just allocated and initialized (alloc=on). */
    @DontInline
    public static void allocated(Object object) {
        if ((U.getIntVolatile(null, GATE) & ALLOCATIONS) != 0) {
            allocated0(object);
        }
    }

    private static native void enter0(int key);

    private static native void enterObject0(Object receiver, int key);

    private static native void enterConstructor0(int key);

    private static native void constructed0(Object self, int key);

    private static native void exit0(int key);

    private static native void allocated0(Object object);
}

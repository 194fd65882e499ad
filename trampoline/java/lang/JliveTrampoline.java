package java.lang;

import java.lang.invoke.MethodHandle;
import java.lang.reflect.Array;
import jdk.internal.misc.Unsafe;
import jdk.internal.vm.annotation.DontInline;
import jdk.internal.vm.annotation.Stable;

/**
 * jlive's bytecode-instrumentation trampolines. libjlive.so defines this class in the
 * bootstrap loader at VM start (in java.lang, so that code of every module can call it). When
 * it is initialized, {@link #bind} (found by its JNI name in libjlive.so; see
 * {@link #bindFrom}) binds the natives
 * with RegisterNatives to functions that read the tick counter and append a record, and
 * answers the address of libjlive's burst gate. Registering from here, with this class as the
 * caller, keeps HotSpot from warning about an agent rebinding a platform class's natives.
 *
 * <p>Instrumented methods read {@link #gate} first and call {@link #enter0} unless it is 0;
 * every return, and a catch-all handler that rethrows, jump to a block that reads it again and
 * calls {@link #exit0} if it is above 0. libjlive sets it with JNI as bursts begin and end. So
 * while no burst records, a traced call costs two loads and two branches, in the interpreter
 * as in compiled code, and no call. Native-method wrappers and the other events call the
 * trampolines below, which read libjlive's own gate before they call their native; they are
 * {@code @DontInline}, so that their branch lives in these methods rather than in every
 * caller.
 *
 * <p>Both gates are hints: the natives check the burst again, so a stale read only delays the
 * moment recording starts or stops. {@link #gate} is a plain field, so that the JIT may move
 * other loads across its reads (a volatile read orders every load after it); a compiled loop
 * with no call may then read it once before the loop, and libjlive makes every thread leave
 * its compiled frames whenever it sets it (JVMTI's interpreted-only mode, entered and left).
 */
public final class JliveTrampoline {
    /** Gate bits (libjlive's capture::bci::GATE_*). */
    private static final int ENTRIES = 1, EXITS = 2, ALLOCATIONS = 4, SYNC = 8;

    /** What {@link #sync0} records (libjlive's capture::sync::trampoline_kind). */
    private static final int NOTIFY = 1, NOTIFY_ALL = 2, SLEEP = 6, SLEPT = 7;

    private static final Unsafe U = Unsafe.getUnsafe();
    /** The gate's native address, from {@link #bind}. */
    private static final long GATE = bindFrom(System.getProperty("jlive.library"));

    /** 1 while a burst records method entries and exits, -1 entries only, 0 neither. */
    public static int gate;

    private JliveTrampoline() {
    }

    private static native long bind();

    /**
     * Binds, loading libjlive.so first when it is given: an agent attached to a running JVM
     * is not among the libraries where the JVM looks for {@link #bind} yet.
     */
    private static long bindFrom(String library) {
        if (library != null) {
            System.load(library);
        }
        return bind();
    }

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

    public static native void enter0(int key);

    /**
     * Entry and exit at once of the leaf method whose key is given: straight code that calls
     * nothing and runs no other Java code (jlive_bci's code::is_leaf), so that nothing can be
     * recorded between them. Its entry calls this, at the same place as {@link #enter0}, and
     * its returns stay as they were.
     */
    public static native void leaf0(int key);

    // Calls of intrinsic candidates are wrapped where they are made (jlive_bci::rewrite's
    // module comment): call(key) before, called(key) after, key being the callee's. HotSpot
    // may run its own code for such a call, even in the interpreter, and then the callee's
    // own entry and exit never run: libjlive notes the time in call0 and records the call in
    // called0 when nothing was recorded in between. Small, so that the JIT inlines their
    // reads of the gate.

    /** Before a call of the intrinsic candidate whose key is given. */
    public static void call(int key) {
        if (gate != 0) {
            call0(key);
        }
    }

    /** After that call returned. */
    public static void called(int key) {
        if (gate != 0) {
            called0(key);
        }
    }

    /** {@link #call} through the critical downcall. */
    public static void callCritical(int key) {
        if (gate != 0) {
            callCritical0(key);
        }
    }

    /** {@link #called} through the critical downcall. */
    public static void calledCritical(int key) {
        if (gate != 0) {
            calledCritical0(key);
        }
    }

    /** Key bit that tells the critical downcalls a wrapped call (libjlive's CALL_BIT). */
    private static final int CALL = 1 << 30;

    /** Key bit that tells the critical entry a leaf's entry and exit (libjlive's LEAF_BIT). */
    private static final int LEAF = 1 << 29;

    @DontInline
    private static void callCritical0(int key) {
        if (downcall(criticalEnter, key | CALL) == 0) {
            call0(key);
        }
    }

    @DontInline
    private static void calledCritical0(int key) {
        if (downcall(criticalExit, key | CALL) == 0) {
            called0(key);
        }
    }

    private static native void call0(int key);

    private static native void called0(int key);

    /**
     * On JDK 22 and later: libjlive's entry and exit functions as FFM critical downcalls, which
     * C2 calls without the JNI transition (libjlive's capture::bci::critical). Made by
     * {@link #critical} on a thread of libjlive's while the application runs, checked by
     * {@link #probeCritical}, then set once by {@link #publishCritical}; {@code @Stable}, so
     * that compiled callers hold them as constants. Until then methods instrumented to call
     * {@link #enterCritical} and {@link #exitCritical} reach the JNI natives through them.
     * (C2 compiles a trampoline that only saw them null with an uncommon trap on the other
     * branch: the first call after they are set deoptimizes it, and it is compiled again, the
     * handle a constant. C1 alone, -XX:TieredStopAtLevel=1, keeps the field's load and a
     * generic invokeExact in what it compiled before, still without the JNI transition.)
     */
    @Stable
    private static MethodHandle criticalEnter, criticalExit;

    /** Made and linked by {@link #critical}; not called from instrumented code until set above. */
    private static MethodHandle madeEnter, madeExit;

    /**
     * The entry of the method whose key is given, through the critical downcall: it records
     * the common case and answers 1, else 0 (no buffer yet, a full one, a plug-in or a trigger)
     * and the JNI native does the rest. Before the downcalls are made, the JNI native.
     */
    @DontInline
    public static void enterCritical(int key) {
        MethodHandle h = criticalEnter;
        if (downcall(h, key) == 0) {
            if (h == null) {
                enter0(key);
            } else {
                enterMissed0(key);
            }
        }
    }

    /** {@link #leaf0} through the critical downcall, as {@link #enterCritical}. */
    @DontInline
    public static void leafCritical(int key) {
        MethodHandle h = criticalEnter;
        if (downcall(h, key | LEAF) == 0) {
            if (h == null) {
                leaf0(key);
            } else {
                leafMissed0(key);
            }
        }
    }

    /** The exit of the method whose key is given, as {@link #enterCritical}. */
    @DontInline
    public static void exitCritical(int key) {
        MethodHandle h = criticalExit;
        if (downcall(h, key) == 0) {
            if (h == null) {
                exit0(key);
            } else {
                exitMissed0(key);
            }
        }
    }

    /**
     * The one call site of both downcalls, so that {@link #critical} links it (and has the
     * handles customized) before any instrumented method calls it: linking runs JDK code that
     * is itself instrumented (Objects.requireNonNull...), which would call it again, and again.
     * Instrumented code reaches it with a null handle until then.
     */
    private static int downcall(MethodHandle h, int key) {
        if (h == null) {
            return 0;
        }
        try {
            return (int) h.invokeExact(key);
        } catch (Throwable t) {
            return 0;
        }
    }

    /** {@link #enter0} after a downcall that answered 0, counted (libjlive's summary). */
    private static native void enterMissed0(int key);

    /** {@link #exit0} after a downcall that answered 0, counted. */
    private static native void exitMissed0(int key);

    /** {@link #leaf0} after a downcall that answered 0, counted. */
    private static native void leafMissed0(int key);

    /**
     * Called by libjlive (JNI) once {@link #critical} has made the downcalls, with JVMTI's
     * MethodEntry on for this thread: every Java method a downcall runs (the FFM adapter checks
     * its target with Objects.requireNonNull on JDK 25) must be one that is never
     * instrumented, or an instrumented method would call it again, and again.
     */
    private static boolean probeCritical() throws Throwable {
        return (int) madeEnter.invokeExact(-1) == 0 && (int) madeExit.invokeExact(-1) == 0
                && downcall(madeEnter, -1) == 0 && downcall(madeExit, -1) == 0;
    }

    /** Called by libjlive (JNI) once {@link #probeCritical} passed: instrumented code uses them. */
    private static boolean publishCritical() {
        criticalEnter = madeEnter;
        criticalExit = madeExit;
        return true;
    }

    /** The address of libjlive's critical entry (0) or exit (1) function. */
    private static native long criticalAddress(int which);

    /**
     * Called by libjlive (JNI) once, on a thread of its own: makes the critical downcalls, true
     * if the JDK has them (JDK 22's java.lang.foreign, reached by reflection: this class is
     * compiled for Java 8). As a class of java.base it may call the restricted downcallHandle
     * without --enable-native-access.
     */
    private static boolean critical() {
        if (madeEnter != null) {
            return true;
        }
        try {
            long enter = criticalAddress(0), exit = criticalAddress(1);
            Class<?> option = Class.forName("java.lang.foreign.Linker$Option");
            // Before anything else of the FFM API: JDK 21's preview has no critical(boolean).
            Object critical = option.getMethod("critical", boolean.class).invoke(null, false);
            Class<?> linkerType = Class.forName("java.lang.foreign.Linker");
            Class<?> descriptor = Class.forName("java.lang.foreign.FunctionDescriptor");
            Class<?> layout = Class.forName("java.lang.foreign.MemoryLayout");
            Class<?> segment = Class.forName("java.lang.foreign.MemorySegment");
            Object linker = linkerType.getMethod("nativeLinker").invoke(null);
            Object jint = Class.forName("java.lang.foreign.ValueLayout").getField("JAVA_INT").get(null);
            Object arguments = Array.newInstance(layout, 1);
            Array.set(arguments, 0, jint);
            // (int) -> int
            Object signature = descriptor.getMethod("of", layout, arguments.getClass())
                    .invoke(null, jint, arguments);
            Object options = Array.newInstance(option, 1);
            Array.set(options, 0, critical);
            java.lang.reflect.Method ofAddress = segment.getMethod("ofAddress", long.class);
            java.lang.reflect.Method downcall =
                    linkerType.getMethod("downcallHandle", segment, descriptor, options.getClass());
            MethodHandle e = (MethodHandle) downcall.invoke(linker, ofAddress.invoke(null, enter), signature, options);
            MethodHandle x = (MethodHandle) downcall.invoke(linker, ofAddress.invoke(null, exit), signature, options);
            // A negative key is never recorded: these calls prove that both downcalls link and
            // return, and leave the call site linked and both handles customized (HotSpot does
            // that after 127 calls of a handle) before instrumented methods call them.
            for (int i = 0; i < 200; i++) {
                if ((int) e.invokeExact(-1) != 0 || (int) x.invokeExact(-1) != 0
                        || downcall(e, -1) != 0 || downcall(x, -1) != 0) {
                    return false;
                }
            }
            madeEnter = e;
            madeExit = x;
            return true;
        } catch (Throwable t) {
            return false;
        }
    }

    public static native void enterObject0(Object receiver, int key);

    public static native void enterConstructor0(int key);

    private static native void constructed0(Object self, int key);

    public static native void exit0(int key);

    private static native void allocated0(Object object);

    /**
     * 1 while a burst records concurrency events (monitors=on): Thread's start, join and sleep
     * methods, woven like traced methods, call {@link #syncEnterObject0} (or
     * {@link #syncEnter0}) and {@link #syncExit0} unless it is 0.
     */
    public static int syncGate;

    public static native void syncEnter0(int hook);

    public static native void syncEnterObject0(Object thread, int hook);

    public static native void syncExit0(int hook);

    // monitors=on: the call sites of Object.notify/notifyAll and Thread.sleep call these
    // instead (same stack effect: the receiver is the first argument). Each records only
    // while libjlive's gate has SYNC, and records the end of a sleep only if it recorded its
    // beginning; libjlive takes the stack below these frames, and a call nested in another
    // recorded one (a sleep inside Thread.sleep(long, int)) is not recorded again.

    public static void notify(Object o) {
        o.notify();
        if ((U.getIntVolatile(null, GATE) & SYNC) != 0) {
            sync0(NOTIFY, o);
        }
    }

    public static void notifyAll(Object o) {
        o.notifyAll();
        if ((U.getIntVolatile(null, GATE) & SYNC) != 0) {
            sync0(NOTIFY_ALL, o);
        }
    }


    public static void sleep(long millis) throws InterruptedException {
        boolean on = (U.getIntVolatile(null, GATE) & SYNC) != 0 && sync0(SLEEP, null);
        try {
            Thread.sleep(millis);
        } finally {
            if (on) {
                sync0(SLEPT, null);
            }
        }
    }

    public static void sleep(long millis, int nanos) throws InterruptedException {
        boolean on = (U.getIntVolatile(null, GATE) & SYNC) != 0 && sync0(SLEEP, null);
        try {
            Thread.sleep(millis, nanos);
        } finally {
            if (on) {
                sync0(SLEPT, null);
            }
        }
    }

    /** Records a concurrency event of this thread on {@code o}; true if it did. */
    private static native boolean sync0(int kind, Object o);
}

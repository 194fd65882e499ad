package java.lang;

/**
  * jlive's bytecode-instrumentation trampolines. libjlive.so defines this class in the
 * bootstrap loader at VM start (in java.lang, so that code of every module can call it). When
 * it is initialized, {@link #bind} (found by its JNI name in libjlive.so) binds the other
 * natives with RegisterNatives to functions that read the tick counter and append a record.
 * Registering from here, with this class as the caller, keeps HotSpot from warning about an
 * agent rebinding a platform class's natives.
 * Instrumented methods call {@link #enter} first, {@link #exit} before every return and from
 * a catch-all handler that rethrows.
 */
public final class JliveTrampoline {
        static {
        bind();
    }

    private JliveTrampoline() {
    }

    private static native void bind();

    /** Entry of the method whose key is given. */
    public static native void enter(int key);

    /** Entry of an instance method, with its receiver (objects=on). */
    public static native void enterObject(Object receiver, int key);

        /** Entry of a constructor whose receiver follows once super() returns (objects=on). */
    public static native void enterConstructor(int key);

    /** The receiver of the constructor whose key is given, right after its super() call. */
    public static native void constructed(Object self, int key);

    /** Exit, normal or by exception, of the method whose key is given. */
    public static native void exit(int key);

    /** An object or array just allocated and initialized (alloc=on). */
    public static native void allocated(Object object);
}

package com.ibm.uvm.instrumenting;

/**
 * The image-level tracing API of IBM VisualAge for Java's tracing VM, served by jlive.
 *
 * <p>{@link #tracingBegin(int)} opens a burst whose method, GC and allocation recording follow
 * the flags (one of each group; a group left out keeps the agent's option). {@link
 * #tracingEnd()} closes it and {@link #userEvent(String)} marks a point. {@link
 * #tracingStartup(String)} loads a user trace library (VA/Java's InstrumentTrace* entry points),
 * which then gets every event of each burst; {@link #reportObjectReferences()} reports the heap's
 * object graph to it. Without libjlive.so every method is a no-op. The flag values are jlive's:
 * the VA/Java document names them only.
 */
public class InstrumentVMSupport {
    public static final int InsTrcTypeExeOn = 0x1;
    public static final int InsTrcTypeExeOnLight = 0x2;
    public static final int InsTrcTypeExeOff = 0x4;
    public static final int InsTrcTypeGCOn = 0x10;
    public static final int InsTrcTypeGCOnLight = 0x20;
    public static final int InsTrcTypeGCOff = 0x40;
    public static final int InsTrcTypeAllocOn = 0x100;
    public static final int InsTrcTypeAllocOff = 0x200;

    /** Set to true by libjlive.so when it binds the natives below. */
    private static boolean bound;

    /**
     * Opens the user trace library and calls its InstrumentTraceStartup: "trace" is libtrace.so
     * in a directory of java.library.path or where the dynamic linker looks (LD_LIBRARY_PATH); a
     * name with a '/' is a path.
     */
    public static void tracingStartup(String libraryName) throws InstrumentVMException {
        if (bound) {
            if (libraryName == null) {
                throw new InstrumentVMException("tracingStartup needs a library name");
            }
            failed(startup0(libraryName));
        }
    }

    /** Ends tracing, calls the library's InstrumentTraceShutdown and stops using it. */
    public static void tracingShutdown() throws InstrumentVMException {
        if (bound) {
            failed(shutdown0());
        }
    }

    /** Turns tracing on with the given ExeOn/OnLight/Off, GCOn/OnLight/Off, AllocOn/Off flags. */
    public static void tracingBegin(int flags) throws InstrumentVMException {
        if (bound) {
            begin0(null, flags);
        }
    }

    /** Turns tracing off. */
    public static void tracingEnd() throws InstrumentVMException {
        if (bound) {
            end0();
        }
    }

    /** Reports that a user-specified event occurred. */
    public static void userEvent(String message) throws InstrumentVMException {
        if (bound && message != null) {
            event0(message);
        }
    }

    /**
     * Reports every live object and each non-null reference it holds (fields, array elements,
     * a class's static fields) to the user trace library, as StartFieldReport, FieldReport and
     * EndFieldReport events, while this thread waits. Needs a started library and tracing on.
     */
    public static void reportObjectReferences() throws InstrumentVMException {
        if (bound) {
            failed(refs0());
        }
    }

    private static void failed(String error) throws InstrumentVMException {
        if (error != null) {
            throw new InstrumentVMException(error);
        }
    }

    private static native boolean begin0(String label, int flags);

    private static native boolean end0();

    private static native void event0(String message);

    private static native boolean tracing0();

    private static native String startup0(String name);

    private static native String shutdown0();

    private static native String refs0();
}

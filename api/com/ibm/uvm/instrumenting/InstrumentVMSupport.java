package com.ibm.uvm.instrumenting;

/**
 * The image-level tracing API of IBM VisualAge for Java's tracing VM, served by jlive.
 *
 * <p>{@link #tracingBegin(int)} opens a burst whose method, GC and allocation recording follow
 * the flags (one of each group; a group left out keeps the agent's option). {@link
 * #tracingEnd()} closes it and {@link #userEvent(String)} marks a point. Without libjlive.so
 * every method is a no-op. The flag values are jlive's: the VA/Java document names them only.
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

    /** Opens the user trace library. jlive writes the trace itself: nothing to open here. */
    public static void tracingStartup(String libraryName) throws InstrumentVMException {
    }

    /** Closes the user trace library opened by tracingStartup. */
    public static void tracingShutdown() throws InstrumentVMException {
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

    /** Object-reference reports are not part of this build: a no-op. */
    public static void reportObjectReferences() throws InstrumentVMException {
    }

    private static native boolean begin0(String label, int flags);

    private static native boolean end0();

    private static native void event0(String message);

    private static native boolean tracing0();
}

package jlive;

/**
 * Control jlive from inside the traced program: begin and end bursts, mark points of interest.
 *
 * <p>When the JVM runs with libjlive.so, jlive binds these methods as the class loads. Without
 * it every method is a harmless no-op and {@link #isTracing()} answers false, so the calls can
 * stay in production code.
 */
public final class Jlive {
    /** Set to true by libjlive.so when it binds the natives below. */
    private static boolean bound;

    private Jlive() {
    }

    /** Begins a burst (as the agent's options describe it), unless one is open. */
    public static void beginBurst() {
        if (bound) {
            begin0(null, 0);
        }
    }

    /** Begins a burst labelled {@code label} (written as a user event at its start). */
    public static void beginBurst(String label) {
        if (bound) {
            begin0(label, 0);
        }
    }

    /** Ends the open burst, if any. */
    public static void endBurst() {
        if (bound) {
            end0();
        }
    }

    /** Writes {@code message} as a USER_EVENT on this thread, if a burst is open. */
    public static void userEvent(String message) {
        if (bound && message != null) {
            event0(message);
        }
    }

    /** True while a burst is open. */
    public static boolean isTracing() {
        return bound && tracing0();
    }

    private static native boolean begin0(String label, int flags);

    private static native boolean end0();

    private static native void event0(String message);

    private static native boolean tracing0();
}

package jdk.internal.misc;

/**
 * Compile-time stand-in for the JDK's jdk.internal.misc.Unsafe, which `javac --release 8`
 * cannot see: the two members the trampoline class uses, so that it compiles to Java 8
 * bytecode. Never packaged; at run time the trampoline links to the JDK's own class.
 */
public final class Unsafe {
    public static native Unsafe getUnsafe();

    public native int getIntVolatile(Object o, long offset);
}

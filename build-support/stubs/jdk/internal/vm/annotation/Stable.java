package jdk.internal.vm.annotation;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Compile-time stand-in for the JDK's annotation of the same name (see Unsafe.java here).
 * HotSpot honours it on fields of classes in the bootstrap loader, where the trampoline
 * class lives.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.FIELD)
public @interface Stable {
}

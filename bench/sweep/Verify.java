import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;
import org.objectweb.asm.tree.AbstractInsnNode;
import org.objectweb.asm.tree.ClassNode;
import org.objectweb.asm.tree.FrameNode;
import org.objectweb.asm.tree.LabelNode;
import org.objectweb.asm.tree.MethodNode;
import org.objectweb.asm.tree.analysis.Analyzer;
import org.objectweb.asm.tree.analysis.AnalyzerException;
import org.objectweb.asm.tree.analysis.BasicValue;
import org.objectweb.asm.tree.analysis.Frame;
import org.objectweb.asm.tree.analysis.SimpleVerifier;
import org.objectweb.asm.util.CheckClassAdapter;

/**
 * The judge of bench/sweep.rs: reads its records (combination, name, instrumented class) from
 * stdin and verifies each class independently of the rewriter and of HotSpot, with ASM:
 * (1) CheckClassAdapter's structural checks of every instruction and constant;
 * (2) a data-flow analysis of every method (ASM's Analyzer over a SimpleVerifier that learns
 *     the class hierarchy from the original class files under the DIRS given, without loading
 *     any class);
 * (3) every StackMapTable frame against that analysis: the stack depth is the one the code
 *     has there, and each local and stack entry the frame declares holds what arrives there
 *     (a reference assignable to the declared class, the same primitive kind).
 * A class whose original fails the same way is counted apart: not the rewriter's doing (the
 * stack maps some compilers wrote into version 50 class files, which HotSpot's verifier
 * refuses and then verifies by inference; JDK classes with access flags ASM does not know,
 * which are still judged by (2) and (3)).
 * Prints the failures (the first 50 in full) and, per combination, classes, methods, frames
 * and failures. Exit status 1 when anything failed.
 *
 * java -cp asm.jar:asm-tree.jar:asm-analysis.jar:asm-util.jar:. Verify DIRS... < records
 */
public class Verify {
    /** Internal name: super name (null for Object), interface flag. */
    static final Map<String, String> SUPER = new HashMap<>();
    static final Map<String, Boolean> INTERFACE = new HashMap<>();
    /** Where each original class file is. */
    static final Map<String, Path> ORIGINAL = new HashMap<>();
    static long unresolved;

    public static void main(String[] args) throws IOException {
        for (String dir : args) {
            Path root = Paths.get(dir);
            try (Stream<Path> s = Files.walk(root)) {
                s.filter(p -> p.toString().endsWith(".class"))
                        .forEach(p -> learn(root.relativize(p).getName(0).toString(), p));
            }
        }
        System.err.println("verify: the hierarchy of " + SUPER.size() + " classes");
        selfTest();
        DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 20));
        // classes, methods, frames, failed classes, classes that fail as they were
        Map<Integer, long[]> tally = new TreeMap<>();
        Map<String, Integer> kinds = new TreeMap<>();
        int shown = 0;
        while (true) {
            int combination;
            byte[] bytes;
            String name;
            try {
                combination = in.readUnsignedByte();
                byte[] o = new byte[in.readUnsignedShort()];
                in.readFully(o);
                origin = new String(o, "UTF-8");
                byte[] n = new byte[in.readUnsignedShort()];
                in.readFully(n);
                name = new String(n, "UTF-8");
                bytes = new byte[in.readInt()];
                in.readFully(bytes);
            } catch (EOFException e) {
                break;
            }
            long[] t = tally.computeIfAbsent(combination, k -> new long[5]);
            t[0]++;
            String failure;
            try {
                failure = verify(bytes, t, true);
            } catch (RuntimeException | LinkageError e) {
                failure = "verifier crashed: " + e;
            }
            if (failure != null && failsAsIs(name, failure)) {
                // The original fails the same way: not the rewriter's doing. When ASM's
                // structural checks refused it, the other two still judge.
                t[4]++;
                String kind = "as it was: " + kindOf(failure);
                kinds.merge(kind.length() > 100 ? kind.substring(0, 100) : kind, 1, Integer::sum);
                boolean structural = failure.startsWith("structure: ");
                try {
                    failure = structural ? verify(bytes, new long[5], false) : null;
                } catch (RuntimeException | LinkageError e) {
                    failure = "verifier crashed: " + e;
                }
            }
            if (failure != null) {
                t[3]++;
                String kind = failure.replaceAll("[0-9]+", "N");
                kind = kind.length() > 90 ? kind.substring(0, 90) : kind;
                kinds.merge(kind, 1, Integer::sum);
                if (shown++ < 50) {
                    System.out.println("FAIL " + combination + " " + name + ": " + failure);
                }
            }
        }
        long failed = 0;
        for (Map.Entry<Integer, long[]> e : tally.entrySet()) {
            long[] t = e.getValue();
            failed += t[3];
            System.out.printf("combination %2d (objects %d alloc %d natives %d inlinable %d): %d classes, %d methods, %d frames, %d failed, %d failed as they were too%n",
                    e.getKey(), e.getKey() & 1, (e.getKey() >> 1) & 1, (e.getKey() >> 2) & 1,
                    (e.getKey() >> 3) & 1, t[0], t[1], t[2], t[3], t[4]);
        }
        for (Map.Entry<String, Integer> k : kinds.entrySet()) {
            System.out.println("failures: " + k.getValue() + " x " + k.getKey());
        }
        System.out.println("verify: " + failed + " classes failed; " + unresolved
                + " assignability questions about classes not in the hierarchy (answered yes)");
        System.exit(failed == 0 ? 0 : 1);
    }

    /** Whether the original class fails the same check (ASM's limits, not the rewriter's
     * doing): the same kind of message, numbers aside. */
    static boolean failsAsIs(String name, String failure) {
        Path p = ORIGINAL.get(origin + "!" + name);
        if (p == null) {
            p = ORIGINAL.get(name);
        }
        if (p == null) {
            return false;
        }
        try {
            String before = verify(Files.readAllBytes(p), new long[5], true);
            return before != null && kindOf(before).equals(kindOf(failure));
        } catch (IOException | RuntimeException | LinkageError e) {
            return false;
        }
    }

    static String kindOf(String failure) {
        return failure.replaceAll("[0-9]+", "N");
    }

    /** The judge must be able to say no: a class it made itself passes, and three spoiled
     * copies of it fail, one for each check. */
    static void selfTest() {
        String[] wrong = {
            null, // as it should be
            "frame type", "frame depth", "max stack",
        };
        for (String spoil : wrong) {
            String failure = verify(selfTestClass(spoil), new long[5], true);
            if ((failure == null) != (spoil == null)) {
                System.out.println("verify: self-test failed: " + (spoil == null ? "the good class" : spoil) + ": " + failure);
                System.exit(2);
            }
        }
    }

    /** static int m(int x, String s) { if (x > 0) x += s.length(); return x; } */
    static byte[] selfTestClass(String spoil) {
        ClassWriter cw = new ClassWriter(0);
        cw.visit(Opcodes.V11, Opcodes.ACC_PUBLIC, "jlive/SelfTest", null, "java/lang/Object", null);
        MethodVisitor m = cw.visitMethod(Opcodes.ACC_STATIC, "m", "(ILjava/lang/String;)I", null, null);
        m.visitCode();
        Label done = new Label();
        m.visitVarInsn(Opcodes.ILOAD, 0);
        m.visitJumpInsn(Opcodes.IFLE, done);
        m.visitVarInsn(Opcodes.ILOAD, 0);
        m.visitVarInsn(Opcodes.ALOAD, 1);
        m.visitMethodInsn(Opcodes.INVOKEVIRTUAL, "java/lang/String", "length", "()I", false);
        m.visitInsn(Opcodes.IADD);
        m.visitVarInsn(Opcodes.ISTORE, 0);
        m.visitLabel(done);
        Object local = "frame type".equals(spoil) ? "java/lang/Integer" : "java/lang/String";
        Object[] stack = "frame depth".equals(spoil) ? new Object[] {Opcodes.INTEGER} : new Object[0];
        m.visitFrame(Opcodes.F_NEW, 2, new Object[] {Opcodes.INTEGER, local}, stack.length, stack);
        m.visitVarInsn(Opcodes.ILOAD, 0);
        m.visitInsn(Opcodes.IRETURN);
        m.visitMaxs("max stack".equals(spoil) ? 1 : 2, 2);
        m.visitEnd();
        cw.visitEnd();
        SUPER.putIfAbsent("jlive/SelfTest", "java/lang/Object");
        INTERFACE.putIfAbsent("jlive/SelfTest", false);
        String[][] known = {
            {"java/lang/Integer", "java/lang/Number"}, {"java/lang/Number", "java/lang/Object"},
            {"java/lang/String", "java/lang/Object"}, {"java/lang/Object", null},
        };
        for (String[] k : known) {
            SUPER.putIfAbsent(k[0], k[1]);
            INTERFACE.putIfAbsent(k[0], false);
        }
        return cw.toByteArray();
    }

    /** The jar or module of the class being judged: its own classes come first. */
    static String origin = "";

    static String superOf(String name) {
        String own = SUPER.get(origin + "!" + name);
        return own != null || SUPER.containsKey(origin + "!" + name) ? own : SUPER.get(name);
    }

    static boolean known(String name) {
        return SUPER.containsKey(origin + "!" + name) || SUPER.containsKey(name);
    }

    static Boolean interfaceFlag(String name) {
        Boolean own = INTERFACE.get(origin + "!" + name);
        return own != null ? own : INTERFACE.get(name);
    }

    static void learn(String from, Path p) {
        try {
            byte[] bytes = Files.readAllBytes(p);
            if (bytes.length > 8 && bytes[6] == 0 && (bytes[7] & 0xFF) > 64) {
                bytes[7] = 64; // as in verify()
            }
            ClassReader r = new ClassReader(bytes);
            boolean itf = (r.getAccess() & Opcodes.ACC_INTERFACE) != 0;
            for (String key : new String[] {r.getClassName(), from + "!" + r.getClassName()}) {
                ORIGINAL.putIfAbsent(key, p);
                SUPER.putIfAbsent(key, r.getSuperName());
                INTERFACE.putIfAbsent(key, itf);
            }
        } catch (IOException | RuntimeException e) {
            // not a class file this ASM reads: not part of the hierarchy
        }
    }

    /** Null when the class passes; else what is wrong. */
    static String verify(byte[] bytes, long[] t, boolean structure) {
        if (((bytes[6] & 0xFF) << 8 | (bytes[7] & 0xFF)) > 64) {
            // Debian's ASM 9.4 reads class files up to Java 20: a newer one (JDK 25's) is read
            // as version 64, whose bytecode, attributes and verification rules it has.
            bytes = bytes.clone();
            bytes[6] = 0;
            bytes[7] = 64;
        }
        ClassReader reader = new ClassReader(bytes);
        // (1) Structure.
        try {
            if (structure) {
                reader.accept(new CheckClassAdapter(null, false), 0);
            }
        } catch (RuntimeException e) {
            return "structure: " + e.getMessage();
        }
        ClassNode cn = new ClassNode();
        reader.accept(cn, ClassReader.EXPAND_FRAMES);
        Type self = Type.getObjectType(cn.name);
        Type parent = cn.superName == null ? null : Type.getObjectType(cn.superName);
        List<Type> interfaces = new ArrayList<>();
        for (String i : cn.interfaces) {
            interfaces.add(Type.getObjectType(i));
        }
        boolean isInterface = (cn.access & Opcodes.ACC_INTERFACE) != 0;
        for (MethodNode m : cn.methods) {
            if ((m.access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE)) != 0) {
                continue;
            }
            t[1]++;
            Hierarchy v = new Hierarchy(self, parent, interfaces, isInterface);
            Frame<BasicValue>[] frames;
            try {
                // (2) Data flow.
                frames = new Analyzer<>(v).analyze(cn.name, m);
            } catch (AnalyzerException e) {
                return m.name + m.desc + ": " + e.getMessage();
            }
            // (3) Stack map frames.
            String bad = checkFrames(cn, m, frames, v, t);
            if (bad != null) {
                return m.name + m.desc + ": " + bad;
            }
        }
        return null;
    }

    static String checkFrames(ClassNode cn, MethodNode m, Frame<BasicValue>[] frames,
            Hierarchy v, long[] t) {
        if ((cn.version & 0xFFFF) < 50) {
            return null; // no stack maps before version 50
        }
        AbstractInsnNode[] insns = m.instructions.toArray();
        for (int i = 0; i < insns.length; i++) {
            if (!(insns[i] instanceof FrameNode)) {
                continue;
            }
            FrameNode fn = (FrameNode) insns[i];
            int at = i + 1;
            while (at < insns.length && insns[at].getOpcode() < 0) {
                at++;
            }
            if (at >= insns.length || frames[at] == null) {
                continue; // unreachable code: nothing arrives to compare with
            }
            t[2]++;
            Frame<BasicValue> f = frames[at];
            int slot = 0;
            for (Object declared : fn.local) {
                if (slot >= f.getLocals()) {
                    return "frame before instruction " + at + " declares local " + slot
                            + " beyond max_locals";
                }
                String bad = matches(declared, f.getLocal(slot), v);
                if (bad != null) {
                    return "frame before instruction " + at + ", local " + slot + ": " + bad;
                }
                slot += declared == Opcodes.LONG || declared == Opcodes.DOUBLE ? 2 : 1;
            }
            if (fn.stack.size() != f.getStackSize()) {
                return "frame before instruction " + at + " declares " + fn.stack.size()
                        + " stack entries, the code has " + f.getStackSize();
            }
            for (int s = 0; s < fn.stack.size(); s++) {
                String bad = matches(fn.stack.get(s), f.getStack(s), v);
                if (bad != null) {
                    return "frame before instruction " + at + ", stack " + s + ": " + bad;
                }
            }
        }
        return null;
    }

    /** Null when what arrives (`actual`) is what the frame declares. */
    static String matches(Object declared, BasicValue actual, Hierarchy v) {
        if (declared == Opcodes.TOP) {
            return null;
        }
        Type a = actual == null ? null : actual.getType();
        if (declared == Opcodes.INTEGER) {
            return a != null && a.getSort() >= Type.BOOLEAN && a.getSort() <= Type.INT ? null
                    : "declared int, holds " + actual;
        }
        if (declared == Opcodes.FLOAT) {
            return a == Type.FLOAT_TYPE ? null : "declared float, holds " + actual;
        }
        if (declared == Opcodes.LONG) {
            return a == Type.LONG_TYPE ? null : "declared long, holds " + actual;
        }
        if (declared == Opcodes.DOUBLE) {
            return a == Type.DOUBLE_TYPE ? null : "declared double, holds " + actual;
        }
        boolean reference = actual != null && actual.isReference();
        if (declared == Opcodes.NULL) {
            return reference && "Lnull;".equals(a.getDescriptor()) ? null
                    : "declared null, holds " + actual;
        }
        if (declared == Opcodes.UNINITIALIZED_THIS || declared instanceof LabelNode) {
            // ASM's analysis does not tell initialized from not: a reference will do.
            return reference ? null : "declared an uninitialized object, holds " + actual;
        }
        if (declared instanceof String) {
            if (!reference) {
                return "declared " + declared + ", holds " + actual;
            }
            String d = (String) declared;
            Type dt = d.startsWith("[") ? Type.getType(d) : Type.getObjectType(d);
            if ("Lnull;".equals(a.getDescriptor()) || v.assignable(dt, a)) {
                return null;
            }
            return "declared " + d + ", holds " + a.getDescriptor();
        }
        return "unknown frame entry " + declared;
    }

    /** SimpleVerifier with the class hierarchy of the original class files. */
    static final class Hierarchy extends SimpleVerifier {
        Hierarchy(Type self, Type parent, List<Type> interfaces, boolean isInterface) {
            super(Opcodes.ASM9, self, parent, interfaces, isInterface);
        }

        boolean assignable(Type to, Type from) {
            return isAssignableFrom(to, from);
        }

        @Override
        protected boolean isInterface(Type type) {
            Boolean i = interfaceFlag(type.getInternalName());
            return i != null && i;
        }

        @Override
        protected Type getSuperClass(Type type) {
            String name = type.getInternalName();
            if (name.equals("java/lang/Object")) {
                return null;
            }
            if (!known(name)) {
                unresolved++;
                return Type.getObjectType("java/lang/Object");
            }
            String s = superOf(name);
            return Type.getObjectType(s == null ? "java/lang/Object" : s);
        }

        @Override
        protected boolean isAssignableFrom(Type to, Type from) {
            if (to.equals(from)) {
                return true;
            }
            if (to.getSort() == Type.ARRAY) {
                if (from.getSort() != Type.ARRAY) {
                    return false;
                }
                Type te = Type.getType(to.getDescriptor().substring(1));
                Type fe = Type.getType(from.getDescriptor().substring(1));
                if (te.getSort() < Type.ARRAY || fe.getSort() < Type.ARRAY) {
                    return te.equals(fe);
                }
                return isAssignableFrom(te, fe);
            }
            String target = to.getInternalName();
            if (target.equals("java/lang/Object")) {
                return true;
            }
            if (from.getSort() == Type.ARRAY) {
                return target.equals("java/lang/Cloneable") || target.equals("java/io/Serializable");
            }
            if (!known(target)) {
                unresolved++;
                return true;
            }
            if (interfaceFlag(target)) {
                return true; // the JVM's verifier treats interfaces as Object
            }
            for (String c = from.getInternalName(); c != null; c = superOf(c)) {
                if (c.equals(target)) {
                    return true;
                }
                if (!known(c)) {
                    unresolved++;
                    return true;
                }
            }
            return false;
        }

        /** Asked only whether an expected type is an interface, after isAssignableFrom said
         * no: interfaces were answered there, so no. */
        @Override
        protected Class<?> getClass(Type type) {
            return Object.class;
        }
    }
}

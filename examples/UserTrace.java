import com.ibm.uvm.instrumenting.InstrumentVMSupport;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;

/**
 * Drives a VA/Java user trace library through InstrumentVMSupport and prints what it did, for
 * the library's counts to be compared with. A first burst (methods, GC and allocations):
 * fib(15) (1973 static calls, with the sum of their recursion depths), 100 calls of a
 * synchronized instance method on one Counter, K Payload objects and K Payload[3] arrays made
 * and dropped (K = 200), three user events, garbage until the young generation was collected
 * twice, two System.gc() calls (and the collections the JVM counted meanwhile), and a tree of
 * 13 Nodes and 4 Node[] arrays (16 references) reported by reportObjectReferences(), and
 * 100,000 calls of Integer.reverseBytes, an intrinsic candidate (once C2 compiles the loop
 * that makes them, it may run its own code for them). A second burst, methods only: fib(10) (177 calls).
 *
 * <p>Argument: the library for tracingStartup ("-" when the agent's plugin= loaded it).
 */
public class UserTrace {
    static class Payload {
        long a;
        long b;
    }

    static class Counter {
        int total;

        synchronized void add(int k) {
            total += k;
        }
    }

    static class Node {
        Node[] kids;
    }

    static int depth;
    static long depthSum;
    static Node root;

    static int fib(int n) {
        depth++;
        depthSum += depth;
        int r = n < 2 ? n : fib(n - 1) + fib(n - 2);
        depth--;
        return r;
    }

    static Object[] make(int k) {
        Object[] all = new Object[2 * k];
        for (int i = 0; i < k; i++) {
            all[2 * i] = new Payload();
            all[2 * i + 1] = new Payload[3];
        }
        return all;
    }

    /** A node whose subtree is `levels` deep, each inner node holding 3 children. */
    static Node tree(int levels) {
        Node n = new Node();
        if (levels > 1) {
            n.kids = new Node[3];
            for (int i = 0; i < 3; i++) {
                n.kids[i] = tree(levels - 1);
            }
        }
        return n;
    }

    /** Collections counted so far: {full, young}. */
    static long[] collections() {
        long full = 0;
        long young = 0;
        for (GarbageCollectorMXBean b : ManagementFactory.getGarbageCollectorMXBeans()) {
            String name = b.getName();
            long c = Math.max(0, b.getCollectionCount());
            if (name.contains("Old") || name.contains("MarkSweep") || name.contains("Major")
                    || name.contains("Full")) {
                full += c;
            } else {
                young += c;
            }
        }
        return new long[] {full, young};
    }

    /** Calls of Integer.reverseBytes, in a method of their own: main, running when the burst
     * instrumented, keeps its old code. */
    static int reverse(int n) {
        int reversed = 0;
        for (int i = 0; i < n; i++) {
            reversed ^= Integer.reverseBytes(i);
        }
        return reversed;
    }

    public static void main(String[] args) throws Exception {
        String lib = args.length > 0 ? args[0] : "-";
        int k = 200;
        if (!lib.equals("-")) {
            InstrumentVMSupport.tracingStartup(lib);
        }
        long[] before = collections();
        InstrumentVMSupport.tracingBegin(InstrumentVMSupport.InsTrcTypeExeOn
                | InstrumentVMSupport.InsTrcTypeGCOn | InstrumentVMSupport.InsTrcTypeAllocOn);
        int f = fib(15);
        Counter counter = new Counter();
        for (int i = 0; i < 100; i++) {
            counter.add(i);
        }
        Object[] keep = make(k);
        for (int i = 0; i < 3; i++) {
            InstrumentVMSupport.userEvent("hello from UserTrace " + i);
        }
        keep = null;
        long young = collections()[1];
        long garbage = 0;
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (collections()[1] < young + 2 && System.nanoTime() < deadline) {
            for (int i = 0; i < 1000; i++) {
                garbage += new byte[16384].length;
            }
        }
        System.gc();
        System.gc();
        root = tree(3);
        InstrumentVMSupport.reportObjectReferences();
        int reversed = reverse(100_000);
        InstrumentVMSupport.tracingEnd();
        long[] after = collections();
        InstrumentVMSupport.tracingBegin(InstrumentVMSupport.InsTrcTypeExeOn
                | InstrumentVMSupport.InsTrcTypeGCOff | InstrumentVMSupport.InsTrcTypeAllocOff);
        int f10 = fib(10);
        InstrumentVMSupport.tracingEnd();
        if (!lib.equals("-")) {
            InstrumentVMSupport.tracingShutdown();
        }
        System.out.println("fib=" + f + "," + f10 + " fib_calls=2150 fib_depth_sum=" + depthSum
                + " adds=100 total=" + counter.total + " payloads=" + k + " arrays=" + k
                + " user_events=3 full_gcs=" + (after[0] - before[0]) + " young_gcs="
                + (after[1] - before[1]) + " tree_objects=17 tree_refs=16"
                + " garbage=" + garbage + (keep == null ? "" : "?") + " reverses=100000"
                + " reversed=" + reversed);
    }
}

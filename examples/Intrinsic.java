/**
 * Calls intrinsic candidates from methods that C2 compiles: compiled (and for some, even
 * interpreted), such a call may run HotSpot's own code instead of the method's bytecode.
 * tests/jit.rs counts the calls: Math.min (bytecode) n times from work; every tenth i,
 * System.identityHashCode (a native) from hash, and StringBuilder's constructor, append(int)
 * and toString (C2 may merge the three into code of its own) from text.
 */
public class Intrinsic {
    static int work(int i) {
        return Math.min(i, 5);
    }

    static int hash(Object o) {
        return System.identityHashCode(o) >>> 31; // 0: the hash is never negative
    }

    static String text(int i) {
        return new StringBuilder().append(i).toString();
    }

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        long sum = 0;
        long digits = 0;
        Object o = new Object();
        for (int i = 0; i < n; i++) {
            sum += work(i);
            if (i % 10 == 0) {
                sum += hash(o);
                digits += text(i).length();
            }
        }
        System.out.println("sum " + sum);
        System.out.println("digits " + digits);
    }
}

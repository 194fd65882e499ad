/**
 * Leaf methods, which capture=bci records by one call at their entry (their entry and exit at
 * the same ticks), beside methods that look alike but are not leaves: each called 1,000 times
 * from main. A leaf calls nothing and can make the JVM run no other Java code, and runs each
 * instruction at most once.
 */
public class Leaves {
    private int count;
    private static int total;
    private final int[] cells = {1, 2, 3, 4};

    // Leaves.

    int count() {
        return count;
    }

    void setCount(int c) {
        count = c;
    }

    static int twice(int x) {
        return x < 0 ? -2 * x : 2 * x;
    }

    static void add(int x) {
        total += x;
    }

    static String name() {
        return "leaves";
    }

    // Not leaves: an array access and an integer division may throw (an exception's
    // constructor is Java code), a loop may run long, a call calls, a Class constant may load.

    int cell(int i) {
        return cells[i];
    }

    static int half(int x) {
        return x / 2;
    }

    static int sum(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            s += i;
        }
        return s;
    }

    static int viaLeaf(int x) {
        return twice(x) + 1;
    }

    static Class<?> type() {
        return Leaves.class;
    }

    public static void main(String[] args) {
        Leaves l = new Leaves();
        long acc = 0;
        for (int i = 0; i < 1000; i++) {
            l.setCount(i);
            acc += l.count() + twice(i - 500) + name().length();
            acc += l.cell(i & 3) + half(i) + sum(3) + viaLeaf(i);
            add(i);
            if (type() != Leaves.class) {
                throw new AssertionError();
            }
        }
        System.out.println("acc " + acc + " total " + total);
    }
}

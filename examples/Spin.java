/**
 * One loop that the JIT compiles with its callee inlined and no call left in it, for a burst
 * that begins while compiled code runs. Args: iterations (default 3,000,000,000, a dependent
 * multiply-add each: 2.5 s on a 2.6 GHz Xeon, so that a burst at 500 ms still finds the loop
 * running on a machine twice as fast). Prints the number of calls to step() it made.
 */
public class Spin {
    static int step(int x) {
        return x * 31 + 7;
    }

    public static void main(String[] args) {
        long n = args.length > 0 ? Long.parseLong(args[0]) : 3_000_000_000L;
        int s = 0;
        for (long i = 0; i < n; i++) {
            s = step(s);
        }
        System.out.println("calls " + n + " (" + s + ")");
    }
}

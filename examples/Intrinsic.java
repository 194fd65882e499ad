/**
 * Calls Math.min, an intrinsic candidate, from a method that C2 compiles: compiled, the call
 * runs HotSpot's own code for min instead of its bytecode. tests/jit.rs counts the calls.
 */
public class Intrinsic {
    static int work(int i) {
        return Math.min(i, 5);
    }

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        long sum = 0;
        for (int i = 0; i < n; i++) {
            sum += work(i);
        }
        System.out.println("sum " + sum);
    }
}

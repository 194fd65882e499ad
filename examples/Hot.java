/**
 * A tiny method called 200,000 times from one loop: hot enough for the JIT to compile the loop
 * and decide whether to inline {@code step} into it.
 */
public class Hot {
    static int step(int x) {
        return x + 1;
    }

    static int loop(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            s = step(s);
        }
        return s;
    }

    public static void main(String[] args) throws InterruptedException {
        // -Dhot.wait=MS: first give libjlive's thread the time to make its FFM downcalls.
        Thread.sleep(Integer.getInteger("hot.wait", 0));
        int sum = 0;
        for (int round = 0; round < 20; round++) {
            sum += loop(10_000);
        }
        System.out.println("sum = " + sum);
    }
}

/** Measures System.nanoTime() around markA() ... markB() with a 1 s sleep between. */
public class Timing {
    static void markA() {
    }

    static void markB() {
    }

    public static void main(String[] args) throws Exception {
        long t0 = System.nanoTime();
        markA();
        Thread.sleep(1000);
        markB();
        long t1 = System.nanoTime();
        // On stderr: stdout stays identical between runs, as the tests compare it.
        System.err.println("elapsed_us=" + (t1 - t0) / 1000);
    }
}

/** Calls tick() for the number of milliseconds given (default 3000), then exits. */
public class Timed {
    static long ticks;

    static void tick() {
        ticks++;
    }

    public static void main(String[] args) {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 3000;
        long end = System.nanoTime() + millis * 1_000_000L;
        while (System.nanoTime() < end) {
            tick();
        }
        System.out.println("ran " + millis + " ms");
    }
}

/** Calls tick() until killed; prints "ready" once it has made 100,000 calls. */
public class Endless {
    static long ticks;

    static void tick() {
        ticks++;
    }

    public static void main(String[] args) {
        while (true) {
            tick();
            if (ticks == 100_000) {
                System.out.println("ready");
                System.out.flush();
            }
        }
    }
}

/**
 * Allocates K Garbage objects, drops every reference to them, then calls System.gc() G times
 * (K = 300, G = 3 unless given). With alloc=on,gc=on every Garbage object is created and
 * reclaimed in the trace; each System.gc() is one collection.
 */
public class Collect {
    static class Garbage {
        final long[] payload = new long[4];
    }

    static Object[] make(int k) {
        Object[] all = new Object[k];
        for (int i = 0; i < k; i++) {
            all[i] = new Garbage();
        }
        return all;
    }

    public static void main(String[] args) {
        int k = args.length > 0 ? Integer.parseInt(args[0]) : 300;
        int g = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        Object[] all = make(k);
        System.out.println("made " + all.length);
        all = null;
        for (int i = 0; i < g; i++) {
            System.gc();
        }
        System.out.println("collected " + g + " times");
    }
}

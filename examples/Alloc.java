/** Allocates K Payload objects and K int[1237] arrays (K = 500 unless given). */
public class Alloc {
    static class Payload {
        final int value;

        Payload(int value) {
            this.value = value;
        }
    }

    public static void main(String[] args) {
        int k = args.length > 0 ? Integer.parseInt(args[0]) : 500;
        Object[] keep = new Object[2 * k];
        for (int i = 0; i < k; i++) {
            keep[2 * i] = new Payload(i);
            keep[2 * i + 1] = new int[1237];
        }
        System.out.println("allocated " + k + " payloads and " + k + " int[1237]; kept " + keep.length);
    }
}

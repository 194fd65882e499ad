import java.util.zip.Adler32;

/**
 * Native methods of a class loaded after start-up: 1000 calls of Adler32.update(int), each of
 * which calls the private static native Adler32.update(int, int).
 */
public class Natives {
    public static void main(String[] args) {
        Adler32 sum = new Adler32();
        for (int i = 0; i < 1000; i++) {
            sum.update(i);
        }
        System.out.println("adler32 " + Long.toHexString(sum.getValue()));
    }
}

import java.lang.reflect.Array;
import java.util.zip.Adler32;

/**
 * Native methods of a class loaded after start-up: 1000 calls of Adler32.update(int), each of
 * which calls the private static native Adler32.update(int, int). Then 1000 calls of the native
 * java.lang.reflect.Array.get, a class that jlive's own start-up loads on JDK 22 and later (the
 * FFM downcalls' set-up).
 */
public class Natives {
    public static void main(String[] args) {
        Adler32 sum = new Adler32();
        for (int i = 0; i < 1000; i++) {
            sum.update(i);
        }
        Object[] values = {"a", "b", "c"};
        int found = 0;
        for (int i = 0; i < 1000; i++) {
            if (Array.get(values, i % 3) != null) {
                found++;
            }
        }
        System.out.println("adler32 " + Long.toHexString(sum.getValue()) + ", " + found + " elements");
    }
}

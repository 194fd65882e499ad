/** An exception thrown in inner() passes through middle() and outer(); exits with code 3. */
public class Throws {
    static void inner() {
        throw new IllegalStateException("thrown three frames down");
    }

    static void middle() {
        inner();
    }

    static void outer() {
        middle();
    }

    public static void main(String[] args) {
        try {
            outer();
        } catch (IllegalStateException e) {
            System.out.println("caught: " + e.getMessage());
        }
        System.exit(3);
    }
}

/** Recursive fib(20): 21891 calls of fib on the main thread. */
public class Fib {
    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    public static void main(String[] args) {
        System.out.println("fib(20) = " + fib(20));
    }
}

/**
 * A thread whose class overrides getId() (it claims to be thread 1, main's ID) holds a
 * monitor until another thread is BLOCKED on it, and 200 ms more, K times (args: K, default
 * 3; Concurrency's contention). On JDK 17, ThreadInfo takes a thread's ID from getId(): a
 * tracer that trusted it would name main as the owner. Prints "monitor MONITOR OWNER"
 * (identity hash codes, 8 hex digits) per contention.
 */
public class OwnId {
    /** Lies about its ID. */
    static final class Liar extends Thread {
        Liar(Runnable r, String name) {
            super(r, name);
        }

        @Override
        public long getId() {
            return 1;
        }
    }

    public static void main(String[] args) throws InterruptedException {
        int k = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        for (int i = 0; i < k; i++) {
            Concurrency.contend(i, Liar::new, "liar-", 200_000_000L);
        }
    }
}

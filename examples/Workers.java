/** Threads worker-0..worker-(N-1); worker-i calls work() 1000*(i+1) times. Args: N (default 4). */
public class Workers {
    static int work(int x) {
        return x * 31 + 7;
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        Thread[] threads = new Thread[n];
        final long[] sums = new long[n];
        for (int i = 0; i < n; i++) {
            final int id = i;
            threads[i] = new Thread(new Runnable() {
                public void run() {
                    long sum = 0;
                    for (int k = 0; k < 1000 * (id + 1); k++) {
                        sum += work(k);
                    }
                    sums[id] = sum;
                }
            }, "worker-" + i);
            threads[i].start();
        }
        long total = 0;
        for (int i = 0; i < n; i++) {
            threads[i].join();
            total += sums[i];
        }
        System.out.println("workers=" + n + " total=" + total);
    }
}

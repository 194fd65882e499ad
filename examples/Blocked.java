import java.util.concurrent.CountDownLatch;

/**
 * A daemon thread "stuck" makes 777 calls of step() and then blocks forever; a daemon thread
 * "spinner" never stops calling spin(). main returns while both are still alive.
 */
public class Blocked {
    static int step(int x) {
        return x + 1;
    }

    static int spin(int x) {
        return x ^ 0x5bd1e995;
    }

    public static void main(String[] args) throws Exception {
        final CountDownLatch ready = new CountDownLatch(1);
        final CountDownLatch never = new CountDownLatch(1);
        Thread stuck = new Thread(new Runnable() {
            public void run() {
                int v = 0;
                for (int i = 0; i < 777; i++) {
                    v = step(v);
                }
                ready.countDown();
                try {
                    never.await();
                } catch (InterruptedException e) {
                    System.out.println("interrupted " + v);
                }
            }
        }, "stuck");
        Thread spinner = new Thread(new Runnable() {
            public void run() {
                int v = 0;
                while (true) {
                    v = spin(v);
                }
            }
        }, "spinner");
        stuck.setDaemon(true);
        spinner.setDaemon(true);
        stuck.start();
        spinner.start();
        ready.await();
        Thread.sleep(100);
        System.out.println("main done");
    }
}

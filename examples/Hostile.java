import java.lang.ref.WeakReference;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;

/**
 * What a server does to a profiler over a day, in one second: threads p-0..p-599, where p-i calls
 * step() i%10+1 times; 20 StackOverflowErrors on main, each caught in overflow(), which then
 * calls recovered(); 200 class loaders, each loading its own Hostile$Plugin and calling its run()
 * once, then dropped and collected (it prints how many were: all 200, unless someone holds them).
 */
public class Hostile {
    static volatile long sink;

    static int step(int x) {
        return x * 31 + 7;
    }

    static int deep(int n) {
        return deep(n + 1) + 1;
    }

    static void overflow() {
        try {
            sink += deep(0);
        } catch (StackOverflowError e) {
            recovered();
        }
    }

    static void recovered() {
        sink++;
    }

    /** Loaded afresh by each loader (whose parent is the bootstrap loader). */
    public static class Plugin {
        public static int run(int x) {
            return x + 1;
        }
    }

    public static void main(String[] args) throws Exception {
        Thread[] threads = new Thread[600];
        for (int i = 0; i < threads.length; i++) {
            final int calls = i % 10 + 1;
            threads[i] = new Thread(() -> {
                long sum = 0;
                for (int k = 0; k < calls; k++) {
                    sum += step(k);
                }
                sink += sum;
            }, "p-" + i);
            threads[i].start();
        }
        for (Thread t : threads) {
            t.join();
        }

        for (int i = 0; i < 20; i++) {
            overflow();
        }

        URL here = Hostile.class.getProtectionDomain().getCodeSource().getLocation();
        WeakReference<?>[] loaders = new WeakReference<?>[200];
        long sum = 0;
        for (int i = 0; i < loaders.length; i++) {
            URLClassLoader loader = new URLClassLoader(new URL[] {here}, null);
            Class<?> plugin = loader.loadClass("Hostile$Plugin");
            if (plugin == Plugin.class) {
                throw new AssertionError("the plugin came from the application's loader");
            }
            Method run = plugin.getMethod("run", int.class);
            sum += (Integer) run.invoke(null, i);
            loaders[i] = new WeakReference<>(loader);
            loader.close();
        }
        int collected = 0;
        for (int round = 0; round < 20 && collected < loaders.length; round++) {
            System.gc();
            Thread.sleep(20);
            collected = 0;
            for (WeakReference<?> r : loaders) {
                collected += r.get() == null ? 1 : 0;
            }
        }
        System.out.println("threads=" + threads.length + " overflows=20 plugins=" + loaders.length
                + " sum=" + sum + " collected=" + collected);
    }
}

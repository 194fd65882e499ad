import java.io.BufferedReader;
import java.io.InputStreamReader;

/**
 * Known work on command, for tests that drive bursts from outside. Prints "ready", then for
 * each line on stdin: "1" calls p1() 1000 times, "2" calls p2() 2000 times, "3" calls p3()
 * 3000 times, each answered "done N"; "quit" ends the program. Phase N also notifies a
 * monitor (no one waits on) 10 N times and sleeps N times, for format=orca. "hold N" makes a
 * list of N Phases$Node objects (N - 1 references between them), held by the static field
 * `held`, answered "held N". "contend N" makes N monitors contended once each: main holds a
 * fresh Phases$Lock until a second thread is blocked entering it, answered "contended N".
 * "greet NAME" calls greet(NAME, 7, 2.5, true, null) once, answered with what it returned.
 * "nest N" calls outer(N) once, which calls inner() N times, each calling leaf() once,
 * answered "nested N".
 */
public class Phases {
    static final Object MONITOR = new Object();

    static final class Node {
        final Node next;
        final int value;

        Node(Node next, int value) {
            this.next = next;
            this.value = value;
        }
    }

    static Node held;

    static final class Lock {}

    static String greet(String who, long n, double d, boolean b, Object o) {
        return "hello " + who;
    }

    static void contend(int n) throws InterruptedException {
        for (int i = 0; i < n; i++) {
            final Lock lock = new Lock();
            Thread t = new Thread(new Runnable() {
                public void run() {
                    synchronized (lock) {
                        lock.hashCode();
                    }
                }
            });
            synchronized (lock) {
                t.start();
                while (t.getState() != Thread.State.BLOCKED) {
                    Thread.sleep(1);
                }
            }
            t.join();
        }
    }

    static int leaf(int x) {
        return x + 1;
    }

    static int inner(int x) {
        return leaf(x) + 1;
    }

    static int outer(int n) {
        int v = 0;
        for (int i = 0; i < n; i++) {
            v = inner(v);
        }
        return v;
    }

    static int p1(int x) {
        return x + 1;
    }

    static int p2(int x) {
        return x + 2;
    }

    static int p3(int x) {
        return x + 3;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("ready");
        System.out.flush();
        int v = 0;
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.equals("quit")) {
                break;
            }
            if (line.startsWith("greet ")) {
                System.out.println(greet(line.substring(6), 7, 2.5, true, null));
                System.out.flush();
                continue;
            }
            if (line.startsWith("contend ")) {
                int n = Integer.parseInt(line.substring(8).trim());
                contend(n);
                System.out.println("contended " + n);
                System.out.flush();
                continue;
            }
            if (line.startsWith("nest ")) {
                int n = Integer.parseInt(line.substring(5).trim());
                outer(n);
                System.out.println("nested " + n);
                System.out.flush();
                continue;
            }
            if (line.startsWith("hold ")) {
                int n = Integer.parseInt(line.substring(5).trim());
                Node head = null;
                for (int i = 0; i < n; i++) {
                    head = new Node(head, i);
                }
                held = head;
                System.out.println("held " + n);
                System.out.flush();
                continue;
            }
            int phase = Integer.parseInt(line);
            for (int i = 0; i < 1000 * phase; i++) {
                v = phase == 1 ? p1(v) : phase == 2 ? p2(v) : p3(v);
            }
            for (int i = 0; i < 10 * phase; i++) {
                synchronized (MONITOR) {
                    MONITOR.notify();
                }
            }
            for (int i = 0; i < phase; i++) {
                Thread.sleep(0, 1);
            }
            System.out.println("done " + phase);
            System.out.flush();
        }
        System.out.println("value " + v);
    }
}

import java.io.BufferedReader;
import java.io.InputStreamReader;

/**
 * Known work on command, for tests that drive bursts from outside. Prints "ready", then for
 * each line on stdin: "1" calls p1() 1000 times, "2" calls p2() 2000 times, "3" calls p3()
 * 3000 times, each answered "done N"; "quit" ends the program. Phase N also notifies a
 * monitor (no one waits on) 10 N times and sleeps N times, for format=orca.
 */
public class Phases {
    static final Object MONITOR = new Object();

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

import java.io.BufferedReader;
import java.io.InputStreamReader;

/**
 * Known work on command, for tests that drive bursts from outside. Prints "ready", then for
 * each line on stdin: "1" calls p1() 1000 times, "2" calls p2() 2000 times, "3" calls p3()
 * 3000 times, each answered "done N"; "quit" ends the program.
 */
public class Phases {
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
            System.out.println("done " + phase);
            System.out.flush();
        }
        System.out.println("value " + v);
    }
}

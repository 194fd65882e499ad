import java.io.BufferedReader;
import java.io.InputStreamReader;

/**
 * Holds a known object graph for a heap walk (jlive ctl heap): a tree 6 levels deep whose
 * inner nodes hold their 3 children in a Node[] (364 Nodes, 121 arrays, 484 references among
 * them), reachable only through the static `root`. Prints "ready", then waits for a line on
 * stdin; "quit" ends it, printing "value" and the tree's size.
 */
public class Graph {
    static class Node {
        Node[] kids;
    }

    static Node root;
    static int nodes;
    static int arrays;

    static Node tree(int levels) {
        Node n = new Node();
        nodes++;
        if (levels > 1) {
            n.kids = new Node[3];
            arrays++;
            for (int i = 0; i < 3; i++) {
                n.kids[i] = tree(levels - 1);
            }
        }
        return n;
    }

    public static void main(String[] args) throws Exception {
        root = tree(6);
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null && !line.equals("quit")) {
            System.out.println("nodes " + nodes + " arrays " + arrays);
            System.out.flush();
        }
        System.out.println("value " + (nodes + arrays));
    }
}

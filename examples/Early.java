/**
 * Methods of classes loaded before the agent's VM init (String, Integer: capture=bci
 * instruments them by retransformation): main calls Integer.toString and String.length 1000
 * times each.
 */
public class Early {
    public static void main(String[] args) {
        int length = 0;
        for (int i = 0; i < 1000; i++) {
            length += Integer.toString(i).length();
        }
        System.out.println("digits " + length);
    }
}

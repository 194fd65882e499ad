/**
 * jlive's demo: a small order book. Three clerk threads price orders (recursive discount
 * rules, string keys, a few allocations); main totals them. Prints the totals, exits 0.
 */
public class Demo implements Runnable {
    private final int clerk;
    private final int orders;
    private long cents;

    Demo(int clerk, int orders) {
        this.clerk = clerk;
        this.orders = orders;
    }

    static int discount(int quantity, int depth) {
        if (depth == 0 || quantity < 2) {
            return 0;
        }
        return 1 + discount(quantity / 2, depth - 1);
    }

    static String sku(int clerk, int order) {
        return "SKU-" + clerk + "-" + (order % 17);
    }

    long price(int order) {
        int quantity = 1 + order % 9;
        int unit = 100 + sku(clerk, order).hashCode() % 50;
        int[] lines = new int[quantity];
        for (int i = 0; i < quantity; i++) {
            lines[i] = unit;
        }
        long total = 0;
        for (int line : lines) {
            total += line;
        }
        return total * (100 - discount(quantity, 4)) / 100;
    }

    public void run() {
        for (int i = 0; i < orders; i++) {
            cents += price(i);
        }
    }

    public static void main(String[] args) throws Exception {
        Demo[] clerks = new Demo[3];
        Thread[] threads = new Thread[3];
        for (int c = 0; c < clerks.length; c++) {
            clerks[c] = new Demo(c, 200 * (c + 1));
            threads[c] = new Thread(clerks[c], "clerk-" + c);
            threads[c].start();
        }
        long total = 0;
        for (int c = 0; c < clerks.length; c++) {
            threads[c].join();
            total += clerks[c].cents;
            System.out.println("clerk-" + c + " priced " + clerks[c].orders + " orders: " + clerks[c].cents + " cents");
        }
        System.out.println("total " + total + " cents");
    }
}

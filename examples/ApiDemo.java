import com.ibm.uvm.instrumenting.InstrumentVMSupport;
import jlive.Jlive;

/**
 * The Java API in use: work before any burst (50 calls), a burst through jlive.Jlive (100 calls
 * and a user event), work between bursts (70 calls), a burst through VA/Java's
 * InstrumentVMSupport with allocation tracing on (30 calls, 30 Item objects). Runs the same
 * without jlive; stderr tells whether bursts were open.
 */
public class ApiDemo {
    static class Item {
        final int n;

        Item(int n) {
            this.n = n;
        }
    }

    static int work(int x) {
        return x * 3 + 1;
    }

    public static void main(String[] args) throws Exception {
        int sum = 0;
        for (int i = 0; i < 50; i++) {
            sum += work(i);
        }
        Jlive.beginBurst("api");
        boolean first = Jlive.isTracing();
        for (int i = 0; i < 100; i++) {
            sum += work(i);
        }
        Jlive.userEvent("halfway");
        Jlive.endBurst();
        for (int i = 0; i < 70; i++) {
            sum += work(i);
        }
        InstrumentVMSupport.tracingBegin(InstrumentVMSupport.InsTrcTypeExeOn
                | InstrumentVMSupport.InsTrcTypeGCOff | InstrumentVMSupport.InsTrcTypeAllocOn);
        boolean second = Jlive.isTracing();
        Item[] items = new Item[30];
        for (int i = 0; i < 30; i++) {
            sum += work(i);
            items[i] = new Item(i);
        }
        InstrumentVMSupport.tracingEnd();
        System.err.println("tracing " + first + " " + second + " after " + Jlive.isTracing());
        System.out.println("sum " + sum + " items " + items.length);
    }
}

/**
 * Coverage expectations (format: CovBasics). @every-line: every line with code carries one.
 * Owned is initialized by a thread that then ends: that thread owns the class's counter array
 * (the class keeps it in its static finals and reaches it without a lookup), later threads
 * count in their own arrays, and the counts add up exactly, with the agent (whose owned
 * arrays are never folded) as with the runtime jar (agent/tests/coverage.rs compares them).
 */
public class CovOwner { // hits=0 (its default constructor)
    static final class Owned { // hits=0
        static int n;

        static void hit() {
            n++; // hits=1750
        } // hits=1750
    }

    public static void main(String[] args) throws InterruptedException {
        Thread first = new Thread(() -> { // hits=1
            for (int i = 0; i < 1000; i++) { // hits=1 br=2/2
                Owned.hit(); // hits=1000
            }
        }); // hits=1
        first.start(); // hits=1
        first.join(); // hits=1
        for (int i = 0; i < 500; i++) { // hits=1 br=2/2
            Owned.hit(); // hits=500
        }
        Thread last = new Thread(() -> { // hits=1
            for (int i = 0; i < 250; i++) { // hits=1 br=2/2
                Owned.hit(); // hits=250
            }
        }); // hits=1
        last.start(); // hits=1
        last.join(); // hits=1
        if (Owned.n != 1750) { // hits=1 br=1/2
            throw new AssertionError(Owned.n); // hits=0
        }
    } // hits=1
}

/**
 * Coverage expectations (format: CovBasics). @every-line: every line with code carries one.
 * Conditions with && and ||, a line cut short by a throw, assert, a synchronized block,
 * constructors with this(...), static initialisation.
 */
public class CovFlow { // jacoco=partly 1/2 (0.8.6 has no assert filter: $assertionsDisabled)
    static int initialized = init(); // hits=1

    static {
        initialized += 1; // hits=1
    }

    static int init() {
        return 41; // hits=1
    }

    final int a;
    final int b;

    CovFlow(int a, int b) { // hits=3
        this.a = a; // hits=3
        this.b = b; // hits=3
    } // hits=3

    CovFlow(int a) {
        this(a, a * 2); // hits=1
    } // hits=1

    static boolean and3(boolean x, boolean y, boolean z) {
        return x && y && z; // hits=3 br=5/6
    }

    static boolean or2(int v) {
        return v < 0 || v > 10; // hits=2 br=3/4
    }

    static String mixed(int v, boolean f) {
        if ((v > 0 && v < 10) || f) { // hits=4 br=6/6
            return "in"; // hits=3
        }
        return "out"; // hits=1
    }

    static int boom(int x) {
        if (x == 0) { // hits=3 br=2/2
            throw new IllegalStateException("zero"); // hits=2
        }
        return x; // hits=1
    }

    /** Only ever cut short: the call throws, the rest of the line never runs. */
    static int onlyThrows(int x) {
        int r = boom(x) + 1; // hits=1 st=partly jacoco=not 0/0 (cut short: JaCoCo reports a line that ran as missed)
        return r; // hits=0
    }

    /** Cut short once, run through once: every instruction of the line ran. */
    static int sometimes(int x) {
        int r = 2 * boom(x); // hits=2 st=full
        return r; // hits=1
    }

    static int checked(int x) {
        assert x > 0 : "positive"; // hits=2 br=0/2 st=partly jacoco=partly 1/4 (0.8.6 has no assert filter)
        return x; // hits=2
    }

    static final Object LOCK = new Object(); // hits=1

    static int locked(int x) {
        synchronized (LOCK) { // hits=2
            x++; // hits=2
        } // hits=2
        return x; // hits=2
    }

    public static void main(String[] args) {
        locked(1); // hits=1
        locked(2); // hits=1
        new CovFlow(1, 2); // hits=1
        new CovFlow(3, 4); // hits=1
        new CovFlow(5); // hits=1
        and3(true, true, true); // hits=1
        and3(true, false, true); // hits=1
        and3(false, true, true); // hits=1
        or2(-1); // hits=1
        or2(5); // hits=1
        mixed(5, false); // hits=1
        mixed(20, true); // hits=1
        mixed(-3, false); // hits=1
        mixed(-3, true); // hits=1
        try {
            onlyThrows(0); // hits=1 st=partly jacoco=not 0/0 (cut short)
        } catch (IllegalStateException e) { // hits=1
        } // hits=0
        try {
            sometimes(0); // hits=1 st=partly jacoco=not 0/0 (cut short)
        } catch (IllegalStateException e) { // hits=1
        } // hits=0
        sometimes(7); // hits=1
        checked(1); // hits=1
        checked(2); // hits=1
    } // hits=1
}

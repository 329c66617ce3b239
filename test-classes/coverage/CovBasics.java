import java.util.ArrayList;
import java.util.List;

/**
 * Coverage expectations: `// hits=N` on a line is the number of times the line's first
 * instruction ran; `br=C/T` its branch outcomes covered and in all (cli/tests/coverage.rs
 * checks every one exactly against the analysis of the solved counters).
 */
public class CovBasics {
    static int loop(int n) {
        int s = 0; // hits=3
        for (int i = 0; i < n; i++) { // hits=3 br=2/2
            s += i; // hits=30
        }
        return s; // hits=3
    }

    static String sign(int x) {
        if (x > 0) { // hits=5 br=2/2
            return "pos"; // hits=2
        } else if (x < 0) { // hits=3 br=2/2
            return "neg"; // hits=1
        }
        return "zero"; // hits=2
    }

    static int check(int x) {
        if (x == 13) { // hits=4 br=2/2
            throw new IllegalArgumentException("13"); // hits=1
        }
        return x; // hits=3
    }

    static int thrower(int x) {
        int r = 1; // hits=4
        r += check(x); // hits=4
        r += 10; // hits=3
        return r; // hits=3
    }

    static int caught(int x) {
        try {
            return thrower(x); // hits=4
        } catch (IllegalArgumentException e) {
            return -1; // hits=1
        } finally {
            finallyRuns++; // hits=4 (javac copies the finally block to every exit: the copies count as one)
        }
    }

    static int finallyRuns;

    static int cases(int k) {
        switch (k) { // hits=6 br=3/4
            case 1:
                return 10; // hits=1
            case 2:
            case 3:
                return 20; // hits=2
            case 7:
                return 70; // hits=0
            default:
                return 0; // hits=3
        }
    }

    /** Cases that fall into the next: counting the switch's edges needs trampolines. */
    static int fallthrough(int k) {
        int r = 0; // hits=5
        switch (k) { // hits=5 br=3/4
            case 1:
                r += 1; // hits=2
            case 2:
                r += 2; // hits=3
                break;
            case 3:
                r += 3; // hits=0
            default:
                r += 4; // hits=2
        }
        return r; // hits=5
    }

    static int strings(String s) {
        switch (s) { // hits=4
            case "a":
                return 1; // hits=2
            case "b":
                return 2; // hits=1
            default:
                return 3; // hits=1
        }
    }

    static boolean both(boolean a, boolean b) {
        return a && b; // hits=4 br=4/4
    }

    static int doWhile(int n) {
        int i = 0; // hits=2
        do {
            i++; // hits=7
        } while (i < n); // hits=7 br=2/2
        return i; // hits=2
    }

    static int never() {
        return 42; // hits=0
    }

    static int work;

    static synchronized void bump() {
        work++; // hits=400000
    }

    /** Called by 8 threads at once, unsynchronized: its counters must still be exact. */
    static int racy(int i) {
        return i + 1; // hits=400000
    }

    static void threads() throws InterruptedException {
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < 8; t++) { // hits=1 br=2/2
            Thread th = new Thread(() -> {
                for (int i = 0; i < 50000; i++) { // hits=8 br=2/2
                    bump(); // hits=400000
                    racy(i); // hits=400000
                }
            });
            ts.add(th);
            th.start();
        }
        for (Thread th : ts) {
            th.join(); // hits=8
        }
    }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 3; i++) {
            loop(10);
        }
        for (int x : new int[] {5, 7, -2, 0, 0}) {
            sign(x);
        }
        for (int x : new int[] {1, 2, 13, 4}) {
            caught(x);
        }
        for (int k : new int[] {1, 2, 3, 4, 5, 6}) {
            cases(k);
        }
        for (int k : new int[] {1, 1, 2, 9, 9}) {
            fallthrough(k);
        }
        for (String s : new String[] {"a", "b", "a", "zz"}) {
            strings(s);
        }
        both(true, true);
        both(true, false);
        both(false, true);
        both(false, false);
        doWhile(5);
        doWhile(2);
        threads();
        if (finallyRuns != 4 || work != 400000) {
            throw new AssertionError(finallyRuns + " " + work);
        }
    }
}

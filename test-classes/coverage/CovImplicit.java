/**
 * Coverage expectations (format: CovBasics.java) for implicit exceptions: instructions that are
 * not calls throw (ArithmeticException, NullPointerException, ArrayIndexOutOfBoundsException,
 * ClassCastException), each caught by the caller. The lines after the throw never ran: 0. The
 * line of the throw ran (its first instruction did): partly covered when the rest of it never
 * ran. JaCoCo 0.8.6 reports every line of a block cut short as not covered.
 */
public class CovImplicit {
    static int sink;
    int f;

    /** Division by zero mid-block, only ever with a zero divisor. */
    static int ratio(int a, int b) {
        sink++; // hits=3 jacoco=not 0/0 (ran before the exception)
        int q = a / b; // hits=3 st=partly jacoco=not 0/0 (cut short)
        int r = q * 100; // hits=0
        return r; // hits=0
    }

    /** A field of null. */
    static int field(CovImplicit o) {
        int n = sink; // hits=2 jacoco=not 0/0 (ran before the exception)
        int x = o.f; // hits=2 st=partly jacoco=not 0/0 (cut short)
        sink = n + x; // hits=0
        return x; // hits=0
    }

    /** An index out of bounds, then a branch (its outcomes follow the load). */
    static int element(int[] a, int i) {
        int v = a[i]; // hits=4
        if (v > 0) { // hits=2 br=2/2
            sink++; // hits=1
        }
        return v; // hits=2
    }

    /** A failed cast, then a call on the line after it. */
    static int cast(Object o) {
        String s = (String) o; // hits=3 st=partly jacoco=not 0/0 (cut short)
        return s.length(); // hits=0
    }

    /** The division in the condition: neither outcome is taken when it throws. */
    static int cond(int a, int b) {
        if (a / b > 0) { // hits=3 br=1/2
            sink++; // hits=1
        }
        sink += 2; // hits=1
        return sink; // hits=1
    }

    /** Each line cut short in turn (the truth: 10, 8, 3, 3). */
    static int mixed(int[] a, int d) {
        int x = a[0]; // hits=10
        int y = x / d; // hits=8
        int z = y + 1; // hits=3
        return z; // hits=3
    }

    /** A loop whose third element is null: the iterations after it never run. */
    static int loop(CovImplicit[] os) {
        int n = 0; // hits=2
        for (CovImplicit o : os) { // hits=2 br=2/2
            n += o.f; // hits=5
            sink++; // hits=4
        }
        return n; // hits=1
    }

    /** A lock of null: monitorenter throws. */
    static int locked(Object lock) {
        sink++; // hits=2 jacoco=not 0/0 (ran before the exception)
        synchronized (lock) { // hits=2 jacoco=not 0/0 (monitorenter, the last instruction of the line, threw)
            sink++; // hits=0
        }
        return sink; // hits=0
    }

    /** What cannot throw (a cast after instanceof, array initializers) changes nothing. */
    static int known(Object o, int d) {
        int[] a = {1, 2, 3}; // hits=3
        if (o instanceof String) { // hits=3 br=2/2
            String s = (String) o; // hits=2
            sink += s.length() / d; // hits=2
        }
        return a[2]; // hits=2
    }

    /** Fields of `this` cannot throw NullPointerException: no exit of their own. */
    int own(int d) {
        int x = f; // hits=2
        f = x / d; // hits=2 st=full
        return f; // hits=1
    }

    public static void main(String[] args) {
        for (int i = 0; i < 3; i++) { // hits=1 br=2/2
            try {
                ratio(1, 0); // hits=3 st=partly jacoco=not 0/0 (cut short)
            } catch (ArithmeticException e) { // hits=3
                sink++; // hits=3
            }
        }
        for (int i = 0; i < 2; i++) { // hits=1 br=2/2
            try {
                field(null); // hits=2 st=partly jacoco=not 0/0 (cut short)
            } catch (NullPointerException e) { // hits=2
                sink++; // hits=2
            }
        }
        element(new int[] {5}, 0); // hits=1
        element(new int[] {-5}, 0); // hits=1
        for (int i = 0; i < 2; i++) { // hits=1 br=2/2
            try {
                element(new int[] {5}, 3); // hits=2 st=partly jacoco=not 0/0 (cut short)
            } catch (ArrayIndexOutOfBoundsException e) { // hits=2
                sink++; // hits=2
            }
        }
        for (int i = 0; i < 3; i++) { // hits=1 br=2/2
            try {
                cast(Integer.valueOf(i)); // hits=3 st=partly jacoco=not 0/0 (cut short)
            } catch (ClassCastException e) { // hits=3
                sink++; // hits=3
            }
        }
        cond(1, 1); // hits=1
        for (int i = 0; i < 2; i++) { // hits=1 br=2/2
            try {
                cond(1, 0); // hits=2 st=partly jacoco=not 0/0 (cut short)
            } catch (ArithmeticException e) { // hits=2
                sink++; // hits=2
            }
        }
        for (int i = 0; i < 3; i++) { // hits=1 br=2/2
            mixed(new int[] {1}, 1); // hits=3
        }
        for (int i = 0; i < 2; i++) { // hits=1 br=2/2
            try {
                mixed(new int[0], 1); // hits=2 st=partly jacoco=not 0/0 (cut short)
            } catch (ArrayIndexOutOfBoundsException e) { // hits=2
                sink++; // hits=2
            }
        }
        for (int i = 0; i < 5; i++) { // hits=1 br=2/2
            try {
                mixed(new int[] {1}, 0); // hits=5 st=partly jacoco=not 0/0 (cut short)
            } catch (ArithmeticException e) { // hits=5
                sink++; // hits=5
            }
        }
        CovImplicit one = new CovImplicit(); // hits=1
        loop(new CovImplicit[] {one, one}); // hits=1
        try {
            loop(new CovImplicit[] {one, one, null, one}); // hits=1 st=partly jacoco=not 0/0 (cut short)
        } catch (NullPointerException e) { // hits=1
            sink++; // hits=1
        }
        one.own(1); // hits=1
        try {
            one.own(0); // hits=1 st=partly jacoco=not 0/0 (cut short)
        } catch (ArithmeticException e) { // hits=1
            sink++; // hits=1
        }
        for (int i = 0; i < 2; i++) { // hits=1 br=2/2
            try {
                locked(null); // hits=2 st=partly jacoco=not 0/0 (cut short)
            } catch (NullPointerException e) { // hits=2
                sink++; // hits=2
            }
        }
        known(1, 1); // hits=1
        known("ab", 1); // hits=1
        try {
            known("ab", 0); // hits=1 st=partly jacoco=not 0/0 (cut short)
        } catch (ArithmeticException e) { // hits=1
            sink++; // hits=1
        }
        System.out.println(sink); // hits=1
    } // hits=1
}

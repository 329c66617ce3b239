// javac's code for `synchronized` (and some of its `finally` code) has a catch-any row that
// covers the handler's own first instructions (`from 35 to 38 target 35 any`: the store of
// the exception and the monitorexit). Coverage inserts a counter
// update before a handler's first instruction; the row must not cover it, or C1 refuses the
// method ("COMPILE SKIPPED: exception handler covers itself") and it stays interpreted
// (cli/tests/coverage.rs, covered_self_covering_handlers_compile_in_c1).
public class CovSelfCover {
    static final Object LOCK = new Object();
    static int n;

    static int id(int x) {
        return x;
    }

    static int sync(int x) {
        synchronized (LOCK) {
            n += id(x);
            if (x > 5) {
                n++;
            }
        }
        return n;
    }

    static int fin(int x) {
        try {
            n += id(x);
            if (x > 3) {
                throw new IllegalStateException("x " + x);
            }
            return n;
        } finally {
            n--;
        }
    }

    public static void main(String[] args) {
        for (int i = 0; i < 8; i++) {
            sync(i);
            try {
                fin(i);
            } catch (IllegalStateException e) {
                n += 100;
            }
        }
        System.out.println(n);
    }
}

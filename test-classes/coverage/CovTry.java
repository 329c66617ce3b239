/**
 * Coverage expectations (format: CovBasics). @every-line: every line with code carries one.
 * try/finally (javac copies the finally block to every exit: the copies count as one), and
 * try-with-resources (the generated close and addSuppressed code is not the program's).
 */
public class CovTry { // hits=0
    static int finallies;

    static class Res implements AutoCloseable {
        final boolean failClose;

        Res(boolean failClose) { // hits=5
            this.failClose = failClose; // hits=5
        } // hits=5

        @Override
        public void close() {
            if (failClose) { // hits=5 br=2/2
                throw new IllegalStateException("close"); // hits=2
            }
        } // hits=3
    }

    static int withFinally(int x) {
        try {
            if (x < 0) { // hits=4 br=2/2
                throw new IllegalArgumentException(); // hits=1
            }
            if (x == 0) { // hits=3 br=2/2
                return 0; // hits=1
            }
            x = x * 2; // hits=2
        } finally {
            finallies++; // hits=4
            if (x > 100) { // hits=4 br=2/2
                finallies += 10; // hits=1
            }
        }
        return x; // hits=2
    }

    static int use(boolean failBody, boolean failClose) {
        try (Res r = new Res(failClose)) { // hits=4
            if (failBody) { // hits=4 br=2/2
                throw new IllegalArgumentException("body"); // hits=2
            }
            return 1; // hits=2
        }
    }

    static int nullable(Res res) {
        try (Res r = res) { // hits=2
            return r == null ? 0 : 1; // hits=2 br=2/2
        }
    }

    static int closes;

    static void closeQuietly(boolean fail) throws java.io.IOException {
        closes++; // hits=2
        if (fail) { // hits=2 br=2/2
            throw new java.io.IOException("close"); // hits=1
        }
    } // hits=1

    /** javac's copies of this finally block differ in local slots (astore_2 and astore_3). */
    static int cleanup(boolean fail) {
        try {
            return 3; // hits=2
        } finally {
            try {
                closeQuietly(fail); // hits=2
            } catch (java.io.IOException e) { // hits=1
                closes += 10; // hits=1
            } // hits=1
        }
    }

    public static void main(String[] args) {
        cleanup(false); // hits=1
        cleanup(true); // hits=1
        nullable(null); // hits=1
        nullable(new Res(false)); // hits=1
        for (int x : new int[] {5, 0, -1, 60}) { // hits=1 br=2/2
            try {
                withFinally(x); // hits=4
            } catch (IllegalArgumentException e) { // hits=1
                finallies += 100; // hits=1
            } // hits=3
        }
        boolean[][] cases = {{false, false}, {true, false}, {false, true}, {true, true}}; // hits=1
        for (boolean[] c : cases) { // hits=1 br=2/2
            try {
                use(c[0], c[1]); // hits=4
            } catch (RuntimeException e) { // hits=3
                finallies += 1000; // hits=3
            } // hits=1
        }
        if (finallies != 3114) { // hits=1 br=1/2
            throw new AssertionError(finallies); // hits=0
        }
    } // hits=1
}

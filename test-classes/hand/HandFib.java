import bci.runtime.Probes;

// The Fib micro with the probes written by hand exactly as the rewriter injects them (entry,
// before each return, catch-all unwind + rethrow). Ids: 0 main, 1 fib, 2 leaf.
// Used to test and measure the runtime on its own.
// expect: unknown.m1 count=53850740
// expect: unknown.m2 count=100000000
// expect: unknown.m0 count=1
public class HandFib {
    static int fib(int n) {
        Probes.enter(1);
        try {
            int r = n < 2 ? n : fib(n - 1) + fib(n - 2);
            Probes.exit(1);
            return r;
        } catch (Throwable t) {
            Probes.unwind(1);
            throw t;
        }
    }

    static int leaf(int x) {
        Probes.enter(2);
        try {
            int r = x * 31 + 7;
            Probes.exit(2);
            return r;
        } catch (Throwable t) {
            Probes.unwind(2);
            throw t;
        }
    }

    public static void main(String[] args) {
        Probes.enter(0);
        try {
            long t0 = System.nanoTime();
            long s = 0;
            for (int i = 0; i < 20; i++) {
                s += fib(30);
            }
            int acc = 0;
            for (int i = 0; i < 100_000_000; i++) {
                acc = leaf(acc ^ i);
            }
            long t1 = System.nanoTime();
            System.out.println("fib sum " + s + " leaf " + acc + " ms " + (t1 - t0) / 1_000_000);
            Probes.exit(0);
        } catch (Throwable t) {
            Probes.unwind(0);
            throw t;
        }
    }
}

// A recursion to StackOverflowError, then calls of the same method (agent/tests/tracing.rs,
// recursion_after_stack_overflow_is_timed; rules in trace-recur-deep.toml). The deepest frames
// have no stack left for the probe at their exit: the runtime's frames of those calls lose
// their end, and the calls after must still be timed from their own frames.
public class TraceRecurDeep {
    static long calls;

    static int down(int n, int sleepMs) throws InterruptedException {
        calls++;
        if (n == 0) {
            Thread.sleep(sleepMs);
            return 0;
        }
        return 1 + down(n - 1, sleepMs);
    }

    public static void main(String[] args) throws Exception {
        // the outermost calls' durations as the program sees them (the traced ones are within)
        long outer = 0;
        for (int r = 0; r < 3; r++) {
            long t0 = System.nanoTime();
            try {
                down(100_000_000, 0);
            } catch (StackOverflowError e) {
                outer += System.nanoTime() - t0;
                System.out.println("overflow");
            }
        }
        for (int r = 0; r < 2; r++) {
            long t0 = System.nanoTime();
            int d = down(3, 30);
            outer += System.nanoTime() - t0;
            System.out.println("down " + d);
        }
        System.out.println("outer_ns " + outer + " calls " + calls);
    }
}

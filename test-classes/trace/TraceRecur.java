// Recursion in the trace summary (agent/tests/tracing.rs,
// recursion_counts_outermost_calls_in_the_total; rules in trace-recur.toml): every call is
// counted, but the total time of a method counts only its outermost calls on each thread (a
// nested call's time is in its caller's already).
public class TraceRecur {
    // fib(10) makes 177 calls
    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    // down(n, true): n nested calls return normally, the outermost throws
    static int down(int n, boolean top) {
        int r = n == 0 ? 0 : down(n - 1, false) + 1;
        if (top) {
            throw new IllegalStateException("top " + r);
        }
        return r;
    }

    public static void main(String[] args) throws Exception {
        // two threads at once: each thread's outermost call is outermost
        java.util.concurrent.CyclicBarrier b = new java.util.concurrent.CyclicBarrier(2);
        int[] other = new int[1];
        Thread t = new Thread(() -> {
            try {
                b.await();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
            other[0] = fib(10);
        }, "other");
        t.start();
        b.await();
        int mine = fib(10);
        t.join();
        System.out.println("fib " + mine + " " + other[0] + " " + fib(10));
        try {
            down(50, true);
        } catch (IllegalStateException e) {
            System.out.println(e.getMessage());
        }
    }
}

// Tracing at the edges (agent/tests/tracing.rs, trace_at_the_edges, rules trace-deep.toml):
// - over() recurses until StackOverflowError under a rule with `stack = 2`: the events the
//   thread has no stack left to make are counted as such, and the program's own stack traces
//   still work afterwards (the first stack walk used to happen, and fail, in an event near
//   the overflow, leaving the JDK's StackTraceElement$HashedModules unusable);
// - nap() is timed by two rules: each rule's self time is its total (it calls no traced
//   method), not the total minus the other rule's time;
// - apply(Op, int) gets an enum constant with a body: named TraceDeep$Op.PLUS, not its body
//   class TraceDeep$Op$1; it is called 3 times, once on a thread named "two\nlines" (one
//   line per event with traceformat=text).
public class TraceDeep {
    enum Op {
        PLUS {
            int on(int x) {
                return x + 1;
            }
        },
        MINUS {
            int on(int x) {
                return x - 1;
            }
        };

        abstract int on(int x);
    }

    static int depth;

    static void over() {
        depth++;
        over();
    }

    static void nap(int ms) throws InterruptedException {
        Thread.sleep(ms);
    }

    static int apply(Op op, int x) {
        return op.on(x);
    }

    public static void main(String[] args) throws Exception {
        try {
            over();
        } catch (StackOverflowError e) {
            System.out.println("overflow");
        }
        Throwable mine = new Exception("the program's own");
        System.out.println("own stack " + (mine.getStackTrace().length > 0));
        for (int i = 0; i < 3; i++) {
            nap(5);
        }
        System.out.println(apply(Op.PLUS, 1) + apply(Op.MINUS, 1));
        // a thread whose name holds a line break: traceformat=text keeps one line per event
        Thread t = new Thread(() -> apply(Op.MINUS, 5), "two\nlines");
        t.start();
        t.join();
    }
}

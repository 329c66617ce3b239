// trace-overflow.toml (agent/tests/tracing.rs, probes_at_stack_overflow_break_nothing):
// recursions to StackOverflowError whose exceptional exits are counted (countDeep) and traced
// (traceDeep). The probes run in the deepest frames, with no stack left: whatever fails there
// must stay inside the runtime (counted as an event that could not be made), never reach the
// program nor leave a JDK class it used half initialized (java.lang.Long was: every later use
// of Long in the JVM threw NoClassDefFoundError).
public class TraceOverflow {
    static int calls;

    static int countDeep(int n) {
        calls++;
        return n == 0 ? 0 : 1 + countDeep(n - 1);
    }

    static int traceDeep(int n) {
        calls++;
        return n == 0 ? 0 : 1 + traceDeep(n - 1);
    }

    public static void main(String[] args) {
        try {
            countDeep(100_000_000);
        } catch (StackOverflowError e) {
            System.out.println("count overflow");
        }
        for (int r = 0; r < 3; r++) {
            try {
                traceDeep(100_000_000);
            } catch (StackOverflowError e) {
                System.out.println("trace overflow");
            }
        }
        System.out.println("after: " + Long.valueOf(42) + " " + String.format("%d", 7L));
    }
}

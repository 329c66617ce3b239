/**
 * A recursion to StackOverflowError under a tracing rule and cpu=times (agent/tests/tracing.rs
 * tracing_probes_out_of_stack_leave_the_profile_exact): the program counts its own calls, a
 * plain static increment before anything that can throw.
 */
public class TraceSoeCount {
    static long calls;

    static int dive(int d) {
        calls++;
        try {
            return dive(d + 1) + 1;
        } catch (StackOverflowError e) {
            return d;
        }
    }

    public static void main(String[] args) {
        long s = 0;
        for (int r = 0; r < 20; r++) {
            s += dive(0);
        }
        System.out.println("calls " + calls + (s > 0 ? "" : " none"));
    }
}

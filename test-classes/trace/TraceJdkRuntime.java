// trace-jdk-runtime.toml (agent/tests/tracing.rs, rules_on_what_the_runtime_uses_count_the_programs_calls):
// a rule counts java.util.Arrays.copyOfRange([BII)[B, which the tracing runtime itself calls
// (String.substring, while it parses a site's info), and a rule traces every class with
// `stack = 2` and `tostring = true`. The runtime called itself through the method (to
// StackOverflowError, ~30 times the program's calls counted); it must count the program's
// calls only, as a cpu=times profile of the same program does.
import java.util.Arrays;

public class TraceJdkRuntime {
    final int[] v;

    TraceJdkRuntime(int... v) {
        this.v = v;
    }

    @Override
    public String toString() {
        // the runtime calls this for `tostring = true`: its calls of copyOfRange are its own
        return "T" + Arrays.toString(v) + new String(Arrays.copyOfRange(new byte[] {65, 66, 67}, 1, 3));
    }

    static int size(TraceJdkRuntime t, byte[] b) {
        return Arrays.copyOfRange(b, 1, 3).length + t.v.length;
    }

    public static void main(String[] args) {
        byte[] b = {1, 2, 3, 4};
        int n = 0;
        for (int i = 0; i < 100; i++) {
            n += size(new TraceJdkRuntime(i, 2), b);
        }
        System.out.println("n " + n + " " + "abcdef".substring(2));
    }
}

import java.util.HashMap;

// trace-early.toml (agent/tests/tracing.rs, jdk_methods_run_before_vminit_are_traced_after_it):
// java.util.HashMap traced whole, arguments and results captured. The JVM runs HashMap's int
// methods (tableSizeFor, hash) while it starts, before VMInit: nothing of an event may run
// then (boxing an int ran Integer.valueOf, whose cache cannot be initialized that early, and
// the JVM died). The program's own calls after VMInit are traced with their values.
public class EarlyJdk {
    public static void main(String[] args) {
        // tableSizeFor(1000) = 1024
        HashMap<String, Integer> m = new HashMap<>(1000);
        m.put("k", 7);
        System.out.println(m.get("k"));
    }
}

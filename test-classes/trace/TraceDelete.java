// trace-delete.toml (agent/tests/tracing.rs, a_trace_file_deleted_while_running_is_said_to_be):
// makes traced calls, deletes the trace file (its path in args[0]) while it runs, then makes
// more. The summary must not say the events were written to a file that is gone.
public class TraceDelete {
    static int traced(int x) {
        return x + 1;
    }

    public static void main(String[] args) throws Exception {
        long s = 0;
        for (int i = 0; i < 1000; i++) {
            s += traced(i);
        }
        Thread.sleep(200);
        System.out.println("deleted " + new java.io.File(args[0]).delete());
        for (int i = 0; i < 1000; i++) {
            s += traced(i);
        }
        System.out.println("s=" + s);
    }
}

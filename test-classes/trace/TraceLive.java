import java.io.InputStream;

// trace-live.toml (agent/tests/tracing.rs, trace_file_is_written_while_the_program_runs):
// five traced calls, then "ticked" on stdout and the program waits for its stdin to close. The
// events must be in the trace file while it waits (the writer flushes within ~100 ms), and
// SIGQUIT must append the summary so far to the report.
public class TraceLive {
    static int tick(int i) {
        return i + 1;
    }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 5; i++) {
            tick(i);
        }
        System.out.println("ticked");
        System.out.flush();
        InputStream in = System.in;
        while (in.read() >= 0) {
        }
        tick(99);
        System.out.println("end");
    }
}

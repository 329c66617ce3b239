import java.util.ArrayList;
import java.util.List;

// trace-interrupt.toml (agent/tests/tracing.rs, a_program_interrupting_every_thread_loses_no_event):
// a program that interrupts every other thread it can see (Thread.getAllStackTraces() lists the
// trace writer too), again and again while it makes args[0] traced calls. Prints the names of
// the threads it interrupted on stdout.
public class TraceInterrupt {
    static int traced(int x) {
        return x + 1;
    }

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        List<String> names = new ArrayList<>();
        long s = 0;
        for (int i = 0; i < n; i++) {
            if (i % 1000 == 0) {
                for (Thread t : Thread.getAllStackTraces().keySet()) {
                    if (t != Thread.currentThread()) {
                        t.interrupt();
                        if (!names.contains(t.getName())) {
                            names.add(t.getName());
                        }
                    }
                }
                Thread.sleep(1);
            }
            s += traced(i);
        }
        System.out.println("interrupted " + names);
        System.out.println("s=" + s);
    }
}

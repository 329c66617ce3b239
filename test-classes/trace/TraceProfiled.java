// trace-profiled.toml (agent/tests/tracing.rs, cpu_times_counts_only_the_programs_calls):
// traced methods next to a cpu=times profile of JDK classes. The tracing runtime's own work
// (boxing arguments, formatting events with StringBuilder and Integer.toString, its
// per-thread state) was profiled and charged to the traced methods: StringBuilder.append
// counted 41,894 calls against the program's 21. The profile must count what it counts
// without the tracing rules.
public class TraceProfiled {
    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    static String label(int i, Object o) {
        return new StringBuilder().append("x").append(i).append(o).toString();
    }

    @Override
    public String toString() {
        return new StringBuilder().append("P").append(7).toString();
    }

    public static void main(String[] args) throws Exception {
        int n = fib(15);
        int len = 0;
        for (int i = 0; i < 10; i++) {
            len += label(i, i % 2 == 0 ? new TraceProfiled() : null).length();
        }
        // a second thread (its own state in the runtime and in the profile)
        Thread t = new Thread(() -> fib(10), "second");
        t.start();
        t.join();
        System.out.println(n + " " + len);
    }
}

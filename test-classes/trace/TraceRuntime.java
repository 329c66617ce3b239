/**
 * The tracing runtime's accounting (agent/tests/trace_runtime.rs runs it with rules of its
 * own): the first argument picks the case.
 */
public class TraceRuntime {
    /** An argument whose toString() (with `tostring = true`) is slow, and counts its calls. */
    static final class Slow {
        static int calls;

        public String toString() {
            calls++;
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                // (not interrupted)
            }
            return "slow";
        }
    }

    static int a(Object o) {
        return 1;
    }

    static int b(Object o) {
        return 2;
    }

    static int caller(Object o) {
        return b(o) + 1;
    }

    static void sleepy(int ms) throws InterruptedException {
        Thread.sleep(ms);
    }

    static void quick() {
    }

    static boolean even(int n) throws InterruptedException {
        if (n == 0) {
            Thread.sleep(100);
            return true;
        }
        return odd(n - 1);
    }

    static boolean odd(int n) throws InterruptedException {
        if (n == 0) {
            return false;
        }
        return even(n - 1);
    }

    static int s(String v) {
        return v.length();
    }

    /**
     * Two sleepy(50) calls, then, still inside: System.exit (exit), or a SIGQUIT to this JVM
     * and a wait for its summary in the report (file=, read from the -agentpath option).
     */
    static void outer(boolean exit) throws Exception {
        sleepy(50);
        sleepy(50);
        if (exit) {
            System.exit(0);
        }
        String file = null;
        for (String a : java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            for (String o : a.split(",")) {
                if (a.startsWith("-agentpath:") && o.startsWith("file=")) {
                    file = o.substring(5);
                }
            }
        }
        java.nio.file.Path report = java.nio.file.Path.of(file);
        new ProcessBuilder("kill", "-QUIT", Long.toString(ProcessHandle.current().pid()))
                .inheritIO().start().waitFor();
        for (int i = 0; i < 200; i++) {
            if (java.nio.file.Files.exists(report)
                    && java.nio.file.Files.readString(report).contains("TRACE SUMMARY (snapshot")) {
                return;
            }
            Thread.sleep(50);
        }
        throw new IllegalStateException("no SIGQUIT summary in " + report);
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "work": {
                // the runtime's formatting of a's and b's events (a toString() of 50 ms) is
                // not the program's time
                Slow x = new Slow();
                int n = 0;
                for (int i = 0; i < 3; i++) {
                    n += a(x) + caller(x);
                }
                System.out.println("n=" + n + " toString calls: " + Slow.calls);
                break;
            }
            case "slowest":
                sleepy(50);
                sleepy(40);
                sleepy(30);
                sleepy(20);
                sleepy(10);
                for (int i = 0; i < 3; i++) {
                    quick();
                }
                break;
            case "mutual":
                System.out.println(even(20));
                break;
            case "calls": {
                // a and b interleaved, 2032 calls each
                int n = 0;
                for (int i = 0; i < 2032; i++) {
                    n += a(null) + b(null);
                }
                System.out.println(n);
                break;
            }
            case "strings":
                s("ab\ud83d\ude00cd");
                s("x\ud800y");
                s("\udc00");
                break;
            case "tostring": {
                Slow x = new Slow();
                for (int i = 0; i < 10; i++) {
                    a(x);
                }
                System.out.println("toString calls: " + Slow.calls);
                break;
            }
            case "exit":
                outer(true);
                break;
            case "sigquit":
                outer(false);
                break;
            default:
                throw new IllegalArgumentException(args[0]);
        }
    }
}

import java.nio.file.Files;
import java.nio.file.Path;

// trace-sig-storm.toml (agent/tests/tracing.rs, sigquit_storm_writes_nothing_after_the_exit_dump):
// prints "running", waits until the file args[1] is written (the first SIGQUIT dump), then 4
// threads call g args[0] times each while SIGQUITs keep coming, through the JVM's exit.
public class TraceSigStorm {
    static int f(int x) {
        return (x * 7) ^ (x >>> 3);
    }

    static int g(int x) {
        return f(x) + 1;
    }

    public static void main(String[] args) throws Exception {
        final int n = Integer.parseInt(args[0]);
        Path first = Path.of(args[1]);
        System.out.println("running");
        System.out.flush();
        for (int i = 0; i < 400 && !(Files.exists(first) && Files.size(first) > 0); i++) {
            Thread.sleep(25);
        }
        Thread[] ts = new Thread[4];
        long[] r = new long[4];
        for (int t = 0; t < 4; t++) {
            final int tt = t;
            ts[t] = new Thread(() -> {
                long s = 0;
                for (int i = 0; i < n; i++) {
                    s += g(i);
                }
                r[tt] = s;
            }, "w" + t);
            ts[t].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        System.out.println("done " + (r[0] + r[1] + r[2] + r[3]));
    }
}

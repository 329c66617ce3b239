import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * clock=sample with a long interval (agent/tests/cpu_times.rs sampled_time_of_ended_threads):
 * four threads, one after the other, and then main each burn 200 ms of their own CPU time in
 * burn(), shorter than the interval. Prints the CPU time burn() used, all threads together.
 */
public class SampleTail {
    static volatile long sink;
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();
    static final AtomicLong BURNT = new AtomicLong();

    static void burn(long ms) {
        long c0 = MX.getCurrentThreadCpuTime();
        long c;
        do {
            for (int i = 0; i < 10_000; i++) {
                sink++;
            }
            c = MX.getCurrentThreadCpuTime();
        } while (c - c0 < ms * 1_000_000L);
        BURNT.addAndGet(c - c0);
    }

    public static void main(String[] a) throws Exception {
        for (int i = 0; i < 4; i++) {
            Thread t = new Thread(() -> burn(200), "t" + i);
            t.start();
            t.join();
        }
        burn(200);
        System.out.println("burnt ms " + BURNT.get() / 1_000_000);
    }
}

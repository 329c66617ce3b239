/**
 * clock=cpu with virtual threads (agent/tests/threads.rs virtual_thread_cpu_clock_is_its_own):
 * one virtual thread sleeps 500 ms (almost no CPU), another spins 400 ms meanwhile on the same
 * carrier (run with -Djdk.virtualThreadScheduler.parallelism=1). The sleeper's clock must not
 * run while it is unmounted, and the carrier's frames (runContinuation) must not be charged
 * the virtual threads' time as their own. Prints the process's CPU time at the end.
 */
public class VtCpuClock {
    static volatile long sink;

    static void sleeper() throws InterruptedException {
        Thread.sleep(500);
    }

    static void spinner() {
        long end = System.nanoTime() + 400_000_000L;
        while (System.nanoTime() < end) {
            sink++;
        }
    }

    public static void main(String[] a) throws Exception {
        Thread s = Thread.ofVirtual().start(() -> {
            try {
                sleeper();
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        });
        Thread.sleep(50);
        Thread p = Thread.ofVirtual().start(VtCpuClock::spinner);
        s.join();
        p.join();
        long cpu = ProcessHandle.current().info().totalCpuDuration().orElseThrow().toMillis();
        System.out.println("process cpu ms " + cpu);
    }
}

// agent/tests/tracing.rs sampler_only_when_a_profile_reads_it: prints the name of every live
// thread, one per line after "thread: " (Java's view: JVMTI agent threads are hidden from it)
// and after "native: " (the OS's, /proc/self/task/*/comm: HotSpot names every thread it starts,
// agent threads included, cut to 15 bytes).
public class TraceThreads {
    static int work(int i) {
        return i + 1;
    }

    public static void main(String[] args) throws Exception {
        int s = 0;
        for (int i = 0; i < 10; i++) {
            s += work(i);
        }
        // give an agent thread started at VMInit time to show up
        Thread.sleep(50);
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            System.out.println("thread: " + t.getName());
        }
        java.io.File[] tasks = new java.io.File("/proc/self/task").listFiles();
        if (tasks != null) {
            for (java.io.File t : tasks) {
                try {
                    String n = new String(java.nio.file.Files.readAllBytes(new java.io.File(t, "comm").toPath())).trim();
                    System.out.println("native: " + n);
                } catch (java.io.IOException e) {
                    // the thread ended
                }
            }
        }
        System.out.println("sum " + s);
    }
}

// Call paths of virtual threads across unmount/mount (JDK 24+; compiled only by the JDK 25 test
// in agent/tests/threads.rs). Each of N virtual threads runs Task.run -> a -> b, and b blocks in
// five ways that unmount a virtual thread (Thread.sleep, LockSupport.parkNanos, a blocking
// queue's take, Object.wait in synchronized, a contended synchronized block), calling c() after
// each; so every c() runs on whatever carrier the thread resumed on. Run with several carriers
// (-Djdk.virtualThreadScheduler.parallelism=4). `java VtPaths N` for N threads (default 1000).
// The expectations are for 1000 threads; counts that are multiples of 1000 scale with N.
// expect: VtPaths.c count=7000
// expect: VtPaths.d count=1000
// expect: VtPaths.b count=1000
// expect: VtPaths.a count=1000
// expect: VtPaths$Task.run count=1000
// expect-path: VtPaths.c < VtPaths.b < VtPaths.a < VtPaths$Task.run count=5000
// expect-path: VtPaths.c < VtPaths.d < VtPaths.b < VtPaths.a count=1000
// expect-path: VtPaths.c < VtPaths.a < VtPaths$Task.run count=1000
// expect-path: VtPaths.d < VtPaths.b < VtPaths.a < VtPaths$Task.run count=1000
// expect-path: VtPaths.b < VtPaths.a < VtPaths$Task.run count=1000
// expect-path: VtPaths.a < VtPaths$Task.run count=1000
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.locks.LockSupport;

public class VtPaths {
    static final LinkedBlockingQueue<Integer> QUEUE = new LinkedBlockingQueue<>();
    static final Object WAIT = new Object();
    static final Object HELD = new Object();
    static volatile long sink;

    static int c(int x) {
        return x * 3 + 1;
    }

    static int d(int x) throws InterruptedException {
        Thread.sleep(1);
        return c(x) + 1;
    }

    static int b(int i) throws InterruptedException {
        Thread.sleep(1);
        int s = c(i);
        LockSupport.parkNanos(200_000);
        s += c(i + 1);
        s += c(QUEUE.take());
        synchronized (WAIT) {
            WAIT.wait(1);
        }
        s += c(i + 2);
        synchronized (HELD) {
            s += c(i + 3);
        }
        return s + d(i);
    }

    static int a(int i) throws InterruptedException {
        int s = b(i);
        return s + c(i);
    }

    static final class Task implements Runnable {
        final int i;

        Task(int i) {
            this.i = i;
        }

        public void run() {
            try {
                sink += a(i);
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
        Thread[] ts = new Thread[n];
        // HELD is held while the threads start: their synchronized (HELD) blocks contend
        synchronized (HELD) {
            for (int i = 0; i < n; i++) {
                ts[i] = Thread.ofVirtual().start(new Task(i));
            }
            Thread.sleep(20);
            for (int i = 0; i < n; i++) {
                QUEUE.put(i);
            }
            Thread.sleep(20);
        }
        for (Thread t : ts) {
            t.join();
        }
        System.out.println("virtual threads " + n);
    }
}

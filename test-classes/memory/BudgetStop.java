import java.util.concurrent.CountDownLatch;

// Counts recorded before recording stops at the memory budget stay exact: warm() 5000 times
// on main, work() 777 times on a thread that is still alive (parked, its counts in its own
// cache) when Paths.main grows the call-path tree past the budget; then late() and 100 more
// work() calls, after the stop, are not counted. Then the heap is used as in Alloc.
public class BudgetStop {
    static long sink;

    static void warm(int i) { sink += i; }

    static void work(int i) { sink ^= i; }

    static void late() { sink++; }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 5000; i++) warm(i);
        CountDownLatch counted = new CountDownLatch(1);
        CountDownLatch go = new CountDownLatch(1);
        Thread w = new Thread(() -> {
            for (int i = 0; i < 777; i++) work(i);
            counted.countDown();
            try {
                go.await();
            } catch (InterruptedException e) {
                return;
            }
            for (int i = 0; i < 100; i++) work(i);
        }, "worker");
        w.setDaemon(true); // the JVM ends if main does not come back
        w.start();
        counted.await();
        Paths.main(new String[] {args[0]});
        for (int i = 0; i < 7; i++) late();
        go.countDown();
        w.join();
        Alloc.main(new String[] {"0", args[1]});
        System.out.println("sink " + sink);
    }
}

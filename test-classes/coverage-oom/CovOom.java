import java.util.ArrayList;

/**
 * Coverage when memory runs out: a thread's first call into a covered class needs a counter
 * array; when none can be allocated (not even the runtime's spare), the call must still run
 * (its counts are lost), not fail with an exception from the counters. Prints "ok" and exits
 * 0, or prints what the call threw and exits 1.
 */
public class CovOom {
    static volatile int state; // 0 wait, 1 go, 2 ran, 3 threw
    static volatile Throwable failure;
    static ArrayList<Object> hog;

    static class Target {
        static int work(int n) {
            int s = 0;
            for (int i = 0; i < n; i++) {
                s += i;
            }
            return s;
        }
    }

    public static void main(String[] args) throws Exception {
        if (Target.work(10) != 45) { // Target loaded and its counters in use on this thread
            throw new AssertionError();
        }
        Thread worker = new Thread(() -> {
            while (state == 0) {
                Thread.onSpinWait();
            }
            try {
                state = Target.work(10) == 45 ? 2 : 3;
            } catch (Throwable e) {
                failure = e;
                state = 3;
            }
        });
        worker.start();
        // fill the heap until not even a one-element array fits
        hog = new ArrayList<>();
        for (int size = 1 << 20; size > 0; ) {
            try {
                hog.add(new long[size]);
            } catch (OutOfMemoryError e) {
                size /= 2;
            }
        }
        state = 1;
        while (state == 1) {
            Thread.onSpinWait();
        }
        hog = null;
        worker.join();
        if (state == 2) {
            System.out.println("ok");
        } else {
            System.out.println("the call threw " + failure);
            System.exit(1);
        }
    }
}

// Synchronized methods (instance and static), one that throws while holding the monitor,
// from 4 threads.
// expect: Sync.add count=4000
// expect: Sync.addStatic count=4000
// expect: Sync.failing count=400
// expect: Sync.block count=4000
public class Sync {
    long value;
    static long svalue;

    synchronized void add(int x) {
        value += x;
    }

    static synchronized void addStatic(int x) {
        svalue += x;
    }

    synchronized void failing(int x) {
        if (x >= 0) {
            throw new IllegalStateException("x" + x);
        }
    }

    void block(int x) {
        synchronized (this) {
            value -= x;
        }
    }

    public static void main(String[] args) throws Exception {
        Sync s = new Sync();
        Thread[] ts = new Thread[4];
        for (int t = 0; t < ts.length; t++) {
            ts[t] = new Thread(() -> {
                for (int i = 0; i < 1000; i++) {
                    s.add(i);
                    addStatic(i);
                    s.block(i);
                    if (i % 10 == 0) {
                        try {
                            s.failing(i);
                        } catch (IllegalStateException e) {
                            // expected
                        }
                    }
                }
            });
            ts[t].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        System.out.println("sync " + s.value + " " + svalue);
    }
}

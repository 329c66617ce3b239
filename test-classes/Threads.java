// 8 threads x 10000 calls of work() (each calling leaf() twice), plus a synchronized counter.
// expect: Threads.work count=80000
// expect: Threads.leaf count=160000
// expect: Threads.inc count=80000
// expect: Threads.lambda$main$0 count=8
// expect: Threads.main count=1
// expect-path: Threads.leaf < Threads.work < Threads.lambda$main$0 count=160000
public class Threads {
    static long counter;

    static int leaf(int x) {
        return x * 3 + 1;
    }

    static int work(int x) {
        return leaf(x) + leaf(x + 1);
    }

    static synchronized void inc() {
        counter++;
    }

    public static void main(String[] args) throws Exception {
        Thread[] ts = new Thread[8];
        for (int i = 0; i < ts.length; i++) {
            ts[i] = new Thread(() -> {
                int acc = 0;
                for (int k = 0; k < 10000; k++) {
                    acc += work(k);
                    inc();
                }
                if (acc == 42) {
                    System.out.println("unlikely");
                }
            });
            ts[i].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        System.out.println("threads " + counter);
    }
}

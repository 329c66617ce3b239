// 10,000 short platform threads (each sleeps 1 ms and calls work() 3 times), started all at
// once and then joined: the agent must fold each ended thread's data into a shared aggregate
// (run by agent/tests/threads.rs under -Xmx256m; `java ManyThreads N` for N threads).
// expect: ManyThreads.work count=30000
// expect: ManyThreads.body count=10000
// expect: ManyThreads.main count=1
// expect-path: ManyThreads.work < ManyThreads.body < ManyThreads.lambda$main$0 count=30000
public class ManyThreads {
    static int work(int x) {
        return x * 7 + 1;
    }

    static void body(int i) {
        try {
            Thread.sleep(1);
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
        int s = work(i) + work(i + 1) + work(i + 2);
        if (s == 42) {
            System.out.println("unlikely");
        }
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 10000;
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            final int k = i;
            ts[i] = new Thread(() -> body(k));
            ts[i].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        System.out.println("threads " + n);
    }
}

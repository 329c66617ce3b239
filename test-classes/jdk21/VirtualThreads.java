// 100,000 virtual threads (JDK 21+; compiled only by the JDK 25 test in agent/tests/threads.rs),
// each sleeping 1 ms and calling work() 3 times; all started, then joined. Run under -Xmx256m.
// `java VirtualThreads N` for N threads.
// expect: VirtualThreads.work count=300000
// expect: VirtualThreads.body count=100000
// expect: VirtualThreads.main count=1
// work() runs after the sleep has unmounted the thread, on any carrier: its call path is whole
// (it showed under Continuation.run < VirtualThread.unmount before those got no probes).
// expect-path: VirtualThreads.work < VirtualThreads.body < VirtualThreads.lambda$main$0 count=300000
public class VirtualThreads {
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
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 100000;
        Thread[] ts = new Thread[n];
        for (int i = 0; i < n; i++) {
            final int k = i;
            ts[i] = Thread.ofVirtual().start(() -> body(k));
        }
        for (Thread t : ts) {
            t.join();
        }
        System.out.println("virtual threads " + n);
    }
}

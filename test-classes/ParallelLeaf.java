// Multi-threaded micro for the overhead benchmark (scripts/bench-cpu-times.sh threads): N threads
// (default 8) each call a tiny leaf method 10M times. Shows whether recording scales per thread.
// expect: ParallelLeaf.leaf count=80000000
// expect: ParallelLeaf.work count=8
public class ParallelLeaf {
    static int leaf(int x) {
        return x * 31 + 7;
    }

    static int work(int n) {
        int acc = 0;
        for (int i = 0; i < n; i++) {
            acc = leaf(acc ^ i);
        }
        return acc;
    }

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 8;
        long t0 = System.nanoTime();
        Thread[] ts = new Thread[threads];
        int[] out = new int[threads];
        for (int k = 0; k < threads; k++) {
            final int kk = k;
            ts[k] = new Thread(() -> out[kk] = work(10_000_000));
            ts[k].start();
        }
        int sum = 0;
        for (int k = 0; k < threads; k++) {
            ts[k].join();
            sum += out[k];
        }
        System.out.println(threads + " threads, sum " + sum + ", ms " + (System.nanoTime() - t0) / 1_000_000);
    }
}

// scripts/bench-trace.sh: ns per call of a hot leaf method (and of one System.nanoTime() read
// for reference). Warms up, then times ROUNDS rounds of N calls and prints the median round.
public class TraceBench {
    static int leaf(int x) {
        return x * 31 + 7;
    }

    static long clockReads(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) {
            s += System.nanoTime();
        }
        return s;
    }

    static int calls(int n) {
        int acc = 0;
        for (int i = 0; i < n; i++) {
            acc += leaf(i);
        }
        return acc;
    }

    static double median(double[] a) {
        java.util.Arrays.sort(a);
        return a[a.length / 2];
    }

    public static void main(String[] args) {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 20_000_000;
        int rounds = 7;
        long sink = 0;
        for (int w = 0; w < 5; w++) {
            sink += calls(n);
            sink += clockReads(n / 10);
        }
        double[] leaf = new double[rounds];
        double[] clock = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            long t0 = System.nanoTime();
            sink += calls(n);
            long t1 = System.nanoTime();
            sink += clockReads(n / 10);
            long t2 = System.nanoTime();
            leaf[r] = (t1 - t0) / (double) n;
            clock[r] = (t2 - t1) / (double) (n / 10);
        }
        System.out.printf("leaf %.2f clock %.2f sink %d%n", median(leaf), median(clock), sink & 1);
    }
}

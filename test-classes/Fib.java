// Fib micro for the overhead benchmark (scripts/bench-cpu-times.sh): recursive fib(30) x20 plus a
// 100M-call tiny leaf method.
// fib(30) makes 2692537 calls (2*F(31)-1); x20 = 53850740. leaf: 100000000 calls.
// expect: Fib.fib count=53850740
// expect: Fib.leaf count=100000000
// expect: Fib.main count=1
public class Fib {
    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    static int leaf(int x) {
        return x * 31 + 7;
    }

    public static void main(String[] args) {
        long t0 = System.nanoTime();
        long s = 0;
        for (int i = 0; i < 20; i++) {
            s += fib(30);
        }
        int acc = 0;
        for (int i = 0; i < 100_000_000; i++) {
            acc = leaf(acc ^ i);
        }
        long t1 = System.nanoTime();
        System.out.println("fib sum " + s + " leaf " + acc + " ms " + (t1 - t0) / 1_000_000);
    }
}

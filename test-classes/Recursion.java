// Recursion: fib and mutual recursion.
// fib(20) makes 2*F(21)-1 = 21891 calls; run 10 times.
// expect: Recursion.fib count=218910
// isEven(n)/isOdd(n) alternate n+1 calls in total; n = 1000, 50 times: 50050
// expect: Recursion.isEven count=25050
// expect: Recursion.isOdd count=25000
// expect: Recursion.main count=1
// expect-path: Recursion.fib < Recursion.main count=10
// expect-path: Recursion.fib < Recursion.fib < Recursion.main count=20
public class Recursion {
    static int fib(int n) {
        if (n < 2) {
            return n;
        }
        return fib(n - 1) + fib(n - 2);
    }

    static boolean isEven(int n) {
        return n == 0 ? true : isOdd(n - 1);
    }

    static boolean isOdd(int n) {
        return n == 0 ? false : isEven(n - 1);
    }

    public static void main(String[] args) {
        long s = 0;
        for (int i = 0; i < 10; i++) {
            s += fib(20);
        }
        int evens = 0;
        for (int i = 0; i < 50; i++) {
            if (isEven(1000)) {
                evens++;
            }
        }
        System.out.println("recursion " + s + " " + evens);
    }
}

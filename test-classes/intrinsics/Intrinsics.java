// HotSpot intrinsics: C1/C2 replace the bodies of these @IntrinsicCandidate methods with
// their own code, and the interpreter runs Math.sqrt through a special entry, so probes in
// their bodies miss calls (Math.sqrt: all of them). They are counted at their call sites.
// Integer.reverse is an intrinsic on JDK 19+ (in the table); on JDK 17 its bytecode runs and
// calls Integer.reverseBytes. Run with include=Intrinsics:java.lang.Integer:java.lang.Math,
// in the default mode, -Xint and -XX:TieredStopAtLevel=1 (agent/tests/cpu_times.rs).
// expect: java.lang.Integer.bitCount count=300000
// expect: java.lang.Math.abs(I)I count=300000
// expect: java.lang.Math.sqrt count=300000
// expect: java.lang.Integer.reverse count=300000
// expect: java.lang.Integer.reverseBytes count=300000
// expect: java.lang.Math.addExact(II)I count=300000
// expect: java.lang.Math.multiplyExact(JJ)J count=300000
// expect: Intrinsics.overflowed count=300
// expect: Intrinsics.mul count=300000
// expect: Intrinsics.afterMul count=300
// expect-path: java.lang.Integer.bitCount < Intrinsics.main count=300000
// expect-path: java.lang.Math.abs < Intrinsics.main count=300000
// expect-path: java.lang.Math.sqrt < Intrinsics.main count=300000
// expect-path: java.lang.Integer.reverse < Intrinsics.main count=300000
// expect-path: java.lang.Integer.reverseBytes < java.lang.Integer.reverse < Intrinsics.main count=300000
// An intrinsic that throws (Math.addExact, Math.multiplyExact overflowing), caught in its
// caller or in the caller's caller: its frame is dropped there, later calls are where they are.
// expect-path: java.lang.Math.addExact < Intrinsics.safeAdd < Intrinsics.main count=300000
// expect-path: Intrinsics.overflowed < Intrinsics.safeAdd < Intrinsics.main count=300
// expect-path: java.lang.Math.multiplyExact < Intrinsics.mul < Intrinsics.main count=300000
// expect-path: Intrinsics.afterMul < Intrinsics.main count=300
public class Intrinsics {
    static int overflowed(int a) {
        return a - 1;
    }

    static int safeAdd(int a, int b) {
        try {
            return Math.addExact(a, b);
        } catch (ArithmeticException e) {
            return overflowed(a);
        }
    }

    static long mul(long a, long b) {
        return Math.multiplyExact(a, b);
    }

    static long afterMul(long a) {
        return a + 1;
    }

    public static void main(String[] args) {
        long s = 0;
        for (int i = 0; i < 300_000; i++) {
            s += Integer.bitCount(i);
            s += Math.abs(i - 1000);
            s += (long) Math.sqrt(i);
            s += Integer.reverse(i) & 1;
            boolean over = i % 1000 == 999;
            s += safeAdd(i, over ? Integer.MAX_VALUE : 1);
            try {
                s += mul(i, over ? Long.MAX_VALUE : 3);
            } catch (ArithmeticException e) {
                s += afterMul(i);
            }
        }
        System.out.println(s);
    }
}

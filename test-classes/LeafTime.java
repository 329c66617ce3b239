// A pure leaf (a loop of arithmetic: no call, allocation or exception, so the agent gives it
// leafEnter/leafExit and no shadow frame) that takes most of the CPU time: clock=sample must
// charge that time to it, not to its caller. Also called through a helper, for the path.
// expect: LeafTime.spin count=40
// expect: LeafTime.viaHelper count=10
// expect: LeafTime.main count=1
// expect-path: LeafTime.spin < LeafTime.main count=30
// expect-path: LeafTime.spin < LeafTime.viaHelper < LeafTime.main count=10
public class LeafTime {
    static long spin(long n) {
        long x = 1;
        for (long i = 0; i < n; i++) {
            x = x * 6364136223846793005L + i;
        }
        return x;
    }

    static long viaHelper(long n) {
        return spin(n) + 1;
    }

    public static void main(String[] args) {
        long s = 0;
        for (int k = 0; k < 30; k++) {
            s += spin(6_000_000);
        }
        for (int k = 0; k < 10; k++) {
            s += viaHelper(6_000_000);
        }
        System.out.println("LeafTime " + s);
    }
}

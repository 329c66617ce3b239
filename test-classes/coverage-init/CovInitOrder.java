/**
 * A class whose code runs before its static initializer: Base's <clinit> makes a Sub, and
 * Base is initialized as part of Sub's initialization (a superclass first), so Sub's
 * constructor runs while Sub's own <clinit> has not started. Offline-instrumented classes
 * keep their coverage id in a static field that <clinit> sets: agent/tests/coverage.rs
 * checks that the runtime jar counts this call too (before: counted in class 0's array, or
 * an ArrayIndexOutOfBoundsException), exactly as the agent does.
 */
public class CovInitOrder {
    static class Base {
        static final Sub INSTANCE = new Sub(3);

        int w() {
            return 1;
        }
    }

    static class Sub extends Base {
        static int made;
        int v;

        Sub(int n) {
            int s = 0;
            for (int i = 0; i < n; i++) {
                s += i % 2 == 0 ? i : -1;
            }
            v = s;
            made++;
        }
    }

    public static void main(String[] args) {
        System.out.println(new Sub(5).v + " " + Base.INSTANCE.v + " " + Sub.made);
    }
}

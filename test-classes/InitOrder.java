// Code that runs before its class's static initializer: Base's <clinit> makes a Sub, and Base
// is initialized as part of Sub's initialization (a superclass first), so Sub's constructor
// runs once before Sub's own <clinit> has started. Classes instrumented offline keep their
// method ids relative to a static field that <clinit> sets: the first Sub() was counted under
// another class's ids (InitOrder.<init>, which never runs, got its count).
// expect: InitOrder$Sub.<init> count=2
// expect: InitOrder$Sub.fold count=2
// expect: InitOrder$Base.<clinit> count=1
// expect: InitOrder.main count=1
public class InitOrder {
    static class Base {
        static final Sub INSTANCE = new Sub(3);
    }

    static class Sub extends Base {
        static int made;
        int v;

        Sub(int n) {
            v = fold(n);
            made++;
        }

        static int fold(int n) {
            int s = 0;
            for (int i = 0; i < n; i++) {
                s += i % 2 == 0 ? i : -1;
            }
            return s;
        }
    }

    public static void main(String[] args) {
        System.out.println(new Sub(5).v + " " + Base.INSTANCE.v + " " + Sub.made);
    }
}

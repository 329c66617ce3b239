// Inner (non-static) classes, static nested classes, local and anonymous classes.
// expect: Inner$Counter.<init> count=1
// expect: Inner$Counter.bump count=40
// expect: Inner$Nested.twice count=40
// expect: Inner$1Local.get count=10
// expect: Inner$1.run count=5
// expect: Inner.outerHelper count=40
public class Inner {
    int total;

    int outerHelper(int x) {
        return x + 1;
    }

    class Counter {
        void bump(int x) {
            total += outerHelper(x);
        }
    }

    static class Nested {
        static int twice(int x) {
            return 2 * x;
        }
    }

    public static void main(String[] args) {
        Inner o = new Inner();
        Inner.Counter c = o.new Counter();
        for (int i = 0; i < 40; i++) {
            c.bump(Nested.twice(i));
        }
        class Local {
            int get(int i) {
                return i * 3;
            }
        }
        Local l = new Local();
        int s = 0;
        for (int i = 0; i < 10; i++) {
            s += l.get(i);
        }
        Runnable r = new Runnable() {
            public void run() {
                o.total++;
            }
        };
        for (int i = 0; i < 5; i++) {
            r.run();
        }
        System.out.println("inner " + o.total + " " + s);
    }
}

import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;

// Matching (annotations, declared supertypes, access, regex, exclusions), time with self time,
// exception-only rules, toString opt-in and threads; rules in trace-match.toml, checked by
// agent/tests/tracing.rs against these `// expect:` lines.
public class TraceMatch {
    @Retention(RetentionPolicy.RUNTIME)
    @interface Traced {}

    @Retention(RetentionPolicy.CLASS)
    @interface Marked {}

    interface Shape {
        double area();
    }

    static class Base {
        int size() {
            return 1;
        }
    }

    // expect: rule=implements count=2
    static class Square extends Base implements Shape {
        public double area() {
            return 4.0;
        }
    }

    // expect: rule=extends count=3
    @Marked
    static class Circle extends Base {
        int size() {
            return 2;
        }

        public double area() {
            return 3.0;
        }
    }

    // expect: rule=annotated count=2
    // expect: rule=annotated event=exit args=[2] ret=4
    @Traced
    static int twice(int x) {
        return 2 * x;
    }

    static int notTraced(int x) {
        return x;
    }

    // expect: rule=regex count=2
    static void getA() {}

    static void getB() {}

    static void getab() {}

    static void getC() {}

    // expect: rule=statics count=1
    static void touch() {}

    void touch(int k) {}

    // expect: rule=outer count=1
    // expect: rule=inner count=3
    static void outer() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            inner();
        }
    }

    static void inner() throws InterruptedException {
        Thread.sleep(5);
    }

    // expect: rule=failures count=2
    // expect: rule=failures events=2
    // expect: rule=failures event=exception args=[1] exception="java.lang.ArithmeticException: / by zero"
    // expect: rule=failures event=exception args=[3] exception="java.lang.ArithmeticException: / by zero"
    static int divide(int x) {
        return 10 / ((x - 1) * (x - 3));
    }

    static class Named {
        public String toString() {
            return "Named!";
        }
    }

    // expect: rule=shown event=exit args=["Named!",null]
    // expect: rule=hidden event=exit args~=["TraceMatch$Named@
    static void show(Object o, Object p) {}

    static void hide(Object o) {}

    // expect: rule=threads count=4000
    static int work(int k) {
        return k + 1;
    }

    public static void main(String[] args) throws Exception {
        Shape s = new Square();
        s.area();
        s.area();
        Circle c = new Circle();
        c.size();
        c.area();
        c.area();
        new Base().size();
        twice(1);
        twice(2);
        notTraced(3);
        getA();
        getB();
        getab();
        getC();
        touch();
        new TraceMatch().touch(1);
        outer();
        for (int x = 0; x < 5; x++) {
            try {
                divide(x);
            } catch (ArithmeticException e) {
                // x = 1 and x = 3
            }
        }
        show(new Named(), null);
        hide(new Named());
        Thread[] ts = new Thread[4];
        for (int i = 0; i < ts.length; i++) {
            ts[i] = new Thread(() -> {
                int acc = 0;
                for (int k = 0; k < 1000; k++) {
                    acc += work(k);
                }
                if (acc == 0) {
                    System.out.println(acc);
                }
            });
            ts[i].start();
        }
        for (Thread t : ts) {
            t.join();
        }
    }
}

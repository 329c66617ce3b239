// TraceCtor.java with JDK 25's statements before super()/this() (JEP 513; the hunt's program,
// agent/tests/tracing.rs, constructors_are_counted_and_traced_from_their_first_instruction;
// rules in ../trace-ctor.toml; compiled only when JDK 25 is installed). The same calls and
// events: a call whose statements before super()/this() threw had no count and no event.
public class TraceFlexCtor {
    static class Base {
        final int v;

        Base(int v) {
            if (v == 99) {
                throw new IllegalStateException("base " + v);
            }
            this.v = v;
        }
    }

    static int check(int v) {
        if (v < 0) {
            throw new IllegalArgumentException("negative " + v);
        }
        return v;
    }

    // expect: rule=count count=10
    // expect: rule=time count=7
    // expect: rule=trace count=7
    // expect: rule=trace events=13
    // expect: rule=trace event=entry args=[-1]
    // expect: rule=trace event=exception args=[-1] exception="java.lang.IllegalArgumentException"
    // expect: rule=trace event=exception args=[-4] exception="java.lang.IllegalArgumentException"
    // expect: rule=trace event=entry args=[99]
    // expect: rule=trace event=exception args=[7] exception="java.lang.UnsupportedOperationException"
    // expect: rule=trace event=exit args=[5]
    // expect: rule=trace event=exit args=[3]
    // expect: rule=string count=3
    // "-4": its this(...) call threw (in the delegate): counted, no exception event
    // expect: rule=string events=2
    // expect: rule=string event=exception args=["x"] exception="java.lang.NumberFormatException"
    // expect: rule=string event=exit args=["3"]
    static class Child extends Base {
        Child(int v) {
            int w;
            try {
                w = check(v);
            } catch (ArithmeticException e) {
                w = 0;
            }
            if (w > 1000) {
                w = 1000;
            }
            System.out.println("checked " + w);
            super(w);
            if (v == 7) {
                throw new UnsupportedOperationException("body");
            }
        }

        Child(String s) {
            int n = Integer.parseInt(s);
            this(n);
        }
    }

    public static void main(String[] args) {
        int ok = 0;
        int bad = 0;
        for (int v : new int[] {-1, -2, 99, 7, 5}) {
            try {
                new Child(v);
                ok++;
            } catch (RuntimeException e) {
                bad++;
            }
        }
        for (String s : new String[] {"x", "3", "-4"}) {
            try {
                new Child(s);
                ok++;
            } catch (RuntimeException e) {
                bad++;
            }
        }
        System.out.println("ok=" + ok + " bad=" + bad);
    }
}

// Tracing rules on constructors whose code before super()/this() throws (agent/tests/tracing.rs,
// constructors_are_counted_and_traced_from_their_first_instruction; rules in trace-ctor.toml).
// Before, a constructor's call began after its super()/this() call: a call whose super(...)
// ARGUMENT threw had no count and no event. Now it is counted (and its entry made, with the
// arguments, not `this`) at the first instruction, and an exception before the super()/this()
// call gives an exception event; one thrown by the super()/this() call itself gives none.
public class TraceCtor {
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

    // 7 calls of Child(int): -1, -2, -4 throw in super(check(v))'s argument, 99 in super()
    // itself, 7 in the body; 5 and 3 return. 3 calls of Child(String): "x" throws in this(...)'s
    // argument, "-4" in the delegate.
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
            super(check(v));
            if (v == 7) {
                throw new UnsupportedOperationException("body");
            }
        }

        Child(String s) {
            this(Integer.parseInt(s));
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

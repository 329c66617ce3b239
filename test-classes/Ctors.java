// Constructors with super() and this(): new Child() runs Child() -> this(0) -> Child(int) ->
// super(int) -> Base(int) -> this() ... ; 100 objects.
// expect: Ctors$Base.<init>()V count=100
// expect: Ctors$Base.<init>(I)V count=100
// expect: Ctors$Child.<init>()V count=100
// expect: Ctors$Child.<init>(I)V count=100
// expect: Ctors$Base.init count=100
// expect: Ctors.arg count=100
// A constructor that throws before super() returns: 10 attempts.
// expect: Ctors.check count=10
// Whatever the probes of Bad.<init> record, the shadow stack must be right afterwards: a
// constructor's frame is entered at its first instruction (frame tokens; without them right after
// its super()/this() call), and no handler may cover that call, so the frame of a Bad.<init>
// whose super() argument threw is dropped when main's handler is entered.
// expect: Ctors.after count=1
// expect-path: Ctors.after < Ctors.main count=1
public class Ctors {
    static int arg(int x) {
        return x + 1;
    }

    static int check(int x) {
        if (x >= 0) {
            throw new IllegalArgumentException("bad " + x);
        }
        return x;
    }

    static int after(int x) {
        return x;
    }

    static class Base {
        int v;

        Base() {
            super();
            init();
        }

        Base(int v) {
            this();
            this.v = v;
        }

        void init() {
            v = 1;
        }
    }

    static class Child extends Base {
        Child() {
            this(0);
        }

        Child(int x) {
            super(arg(x));
        }
    }

    static class Bad extends Base {
        Bad(int x) {
            super(check(x));
        }
    }

    public static void main(String[] args) {
        int s = 0;
        for (int i = 0; i < 100; i++) {
            s += new Child().v;
        }
        int bad = 0;
        for (int i = 0; i < 10; i++) {
            try {
                new Bad(i);
            } catch (IllegalArgumentException e) {
                bad++;
            }
        }
        System.out.println("ctors " + s + " " + after(bad));
    }
}

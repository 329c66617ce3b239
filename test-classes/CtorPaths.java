// Constructors' call paths, as HPROF showed them: a constructor's frame is entered at its first
// instruction, so what it runs before its super() call (the argument, arg) and the superclass
// constructor it calls (Base.<init>, then Object.<init> and work) are its callees, not siblings
// under the caller. 50 objects.
// expect: CtorPaths$Sub.<init> count=50
// expect: CtorPaths$Base.<init> count=50
// expect: CtorPaths.arg count=50
// expect: CtorPaths.work count=50
// expect-path: CtorPaths.arg < CtorPaths$Sub.<init> < CtorPaths.main count=50
// expect-path: CtorPaths$Base.<init> < CtorPaths$Sub.<init> < CtorPaths.main count=50
// expect-path: CtorPaths.work < CtorPaths$Base.<init> < CtorPaths$Sub.<init> < CtorPaths.main count=50
// expect-path: java.lang.Object.<init> < CtorPaths$Base.<init> < CtorPaths$Sub.<init> < CtorPaths.main count=50
// A superclass constructor that throws, caught by the caller of `new Bad(i)`: 10 attempts. The
// frame of Bad.<init>, whose super() call no handler can cover, is dropped when main's handler
// is entered, so main's next calls (after) are main's callees, not Bad.<init>'s.
// expect: CtorPaths$Bad.<init> count=10
// expect: CtorPaths$Thrower.<init> count=10
// expect: CtorPaths.after count=10
// expect-path: CtorPaths$Thrower.<init> < CtorPaths$Bad.<init> < CtorPaths.main count=10
// expect-path: CtorPaths.after < CtorPaths.main count=10
// expect-path: CtorPaths.after < CtorPaths$Bad.<init> count=0
public class CtorPaths {
    static int work(int x) {
        return x + 1;
    }

    static int arg(int x) {
        return x * 2;
    }

    static int after(int x) {
        return x;
    }

    static class Base {
        int v;

        Base(int x) {
            v = work(x);
        }
    }

    static class Sub extends Base {
        Sub(int x) {
            super(arg(x));
        }
    }

    static class Thrower {
        Thrower(int x) {
            if (x >= 0) {
                throw new IllegalStateException("no " + x);
            }
        }
    }

    static class Bad extends Thrower {
        Bad(int x) {
            super(x);
        }
    }

    public static void main(String[] args) {
        int s = 0;
        for (int i = 0; i < 50; i++) {
            s += new Sub(i).v;
        }
        for (int i = 0; i < 10; i++) {
            try {
                new Bad(i);
            } catch (IllegalStateException e) {
                s += after(i);
            }
        }
        System.out.println("ctor paths " + s);
    }
}

// An exception thrown through 3 frames (c -> b -> a) and caught in main, 1000 times; then
// after() must be called from main (the shadow stack popped all three frames).
// expect: Exceptions.a count=1000
// expect: Exceptions.b count=1000
// expect: Exceptions.c count=1000
// expect: Exceptions.after count=1000
// expect: Exceptions.catchInside count=500
// expect: Exceptions.thrower count=500
// expect-path: Exceptions.after < Exceptions.main count=1000
// expect-path: Exceptions.c < Exceptions.b < Exceptions.a < Exceptions.main count=1000
// expect-path: Exceptions.thrower < Exceptions.catchInside < Exceptions.main count=500
public class Exceptions {
    static int c(int i) {
        if (i >= 0) {
            throw new IllegalStateException("c " + i);
        }
        return i;
    }

    static int b(int i) {
        return c(i) + 1;
    }

    static int a(int i) {
        return b(i) + 1;
    }

    static int after(int i) {
        return i + 1;
    }

    static int thrower(int i) {
        throw new RuntimeException("t" + i);
    }

    static int catchInside(int i) {
        try {
            return thrower(i);
        } catch (RuntimeException e) {
            return -1;
        }
    }

    public static void main(String[] args) {
        int caught = 0;
        int s = 0;
        for (int i = 0; i < 1000; i++) {
            try {
                s += a(i);
            } catch (IllegalStateException e) {
                caught++;
            }
            s += after(i);
        }
        for (int i = 0; i < 500; i++) {
            s += catchInside(i);
        }
        System.out.println("exceptions " + caught + " " + s);
    }
}

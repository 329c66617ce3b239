/**
 * Coverage expectations (format: ../coverage/CovBasics.java) for exceptions leaving code after
 * calls. A call's exceptional exit is counted by the method's handlers, from a local that names
 * the running block; an exception at an instruction that is not a call must never count as the
 * exit of an earlier call (a line that ran would show as missed). Instructions that throw
 * implicitly (a field of null) end their block the same way where another line follows, so
 * the lines after them count exactly too (test-classes/coverage/CovImplicit.java).
 */
public class CovExits {
    static int sink;
    int f;

    static void g() {
        sink++; // hits=21
    }

    static int thrower(boolean fail) {
        if (fail) { // hits=9 br=2/2
            throw new IllegalStateException(); // hits=4
        }
        return 1; // hits=5
    }

    /** A NullPointerException in a block without a call, after a call. */
    static int afterCall(CovExits o) {
        g(); // hits=4
        int x = o.f; // hits=4 st=partly
        return x; // hits=0
    }

    /** The same in a loop: the third element is null. */
    static int loop(CovExits[] os) {
        int n = 0; // hits=2
        for (CovExits o : os) { // hits=2 br=2/2
            g(); // hits=5
            n += o.f; // hits=5
        }
        return n; // hits=1
    }

    /** A NullPointerException before the call of a block that ends in a call. */
    static void inCallBlock(CovExits o) {
        g(); // hits=2
        sink += o.f + thrower(false); // hits=2
        sink++; // hits=1
    }

    /** A call's exception caught in the same method. */
    static int caught(boolean fail) {
        int r = 0; // hits=2
        try {
            r = thrower(fail); // hits=2
            r++; // hits=1
        } catch (IllegalStateException e) { // hits=1
            r = -1; // hits=1
        }
        return r; // hits=2
    }

    /** A call's exception out of the method (the catch-all counts it). */
    static void outOf(boolean fail) {
        sink++; // hits=2
        thrower(fail); // hits=2
        sink++; // hits=1
    }

    /** Inside synchronized (javac's handler releases the lock and re-throws). */
    static int locked(boolean fail) {
        synchronized (CovExits.class) { // hits=2
            sink += thrower(fail); // hits=2
            sink++; // hits=1
        }
        return sink; // hits=1
    }

    /** A loop of calls only: the edges after the calls form a cycle. */
    static void calls(int n) {
        for (int i = 0; i < n; i++) { // hits=1 br=2/2
            g(); // hits=5
            g(); // hits=5
        }
    } // hits=1

    CovExits(int v) {
        f = v; // hits=2
    } // hits=2

    /** A call before this(): no handler may cover it (the edge after it is counted). */
    CovExits(boolean fail) {
        this(thrower(fail)); // hits=2
        sink++; // hits=1
    } // hits=1

    public static void main(String[] args) {
        for (int i = 0; i < 4; i++) { // hits=1 br=2/2
            try {
                afterCall(null); // hits=4 st=partly
            } catch (NullPointerException e) { // hits=4
                sink += 100; // hits=4
            }
        }
        CovExits one = new CovExits(1); // hits=1
        loop(new CovExits[] {one, one}); // hits=1
        try {
            loop(new CovExits[] {one, one, null}); // hits=1 st=partly
        } catch (NullPointerException e) { // hits=1
            sink += 1000; // hits=1
        }
        inCallBlock(one); // hits=1
        try {
            inCallBlock(null); // hits=1
        } catch (NullPointerException e) { // hits=1
            sink += 10000; // hits=1
        }
        caught(false); // hits=1
        caught(true); // hits=1
        outOf(false); // hits=1
        try {
            outOf(true); // hits=1
        } catch (IllegalStateException e) { // hits=1
            sink += 100000; // hits=1
        }
        locked(false); // hits=1
        try {
            locked(true); // hits=1 st=partly
        } catch (IllegalStateException e) { // hits=1
            sink += 1000000; // hits=1
        }
        calls(5); // hits=1
        new CovExits(false); // hits=1
        try {
            new CovExits(true); // hits=1 st=partly
        } catch (IllegalStateException e) { // hits=1
            sink += 10000000; // hits=1
        }
        System.out.println(sink); // hits=1
    } // hits=1
}

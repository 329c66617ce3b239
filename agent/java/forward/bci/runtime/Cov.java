package bci.runtime;

/**
 * bci.runtime.Cov as the agent defines it (boot loader, at VMInit) with {@code coverage=y}:
 * classes instrumented by {@code bci instrument --coverage} register with the agent (same class
 * ids as the classes it instruments itself) and count in java.lang.BciCov's arrays, so that
 * their data goes into the agent's data file with the rest. The runtime jar's Cov on the class
 * path is then not used, and a loader that defines its own bci.runtime.Cov (a child-first
 * web-app loader with the runtime jar) gets these bytes from the agent's class hook: its
 * {@link #agentRegister} is then found under its JNI name in the agent library.
 */
public final class Cov {
    private Cov() {}

    private static native int agentRegister(String name, long hash, int n);

    public static int register(String name, long hash, int n) {
        return agentRegister(name, hash, n);
    }

    /** The lookup of the {@code bci$a} method of classes instrumented offline. */
    public static long[] find(int cid) {
        return java.lang.BciCov.find(cid);
    }

    public static long[] create(int cid, int n) {
        return java.lang.BciCov.create(cid, n);
    }

    public static long[] own(int cid, int n) {
        return java.lang.BciCov.own(cid, n);
    }

    public static Object owner(long[] a) {
        return java.lang.BciCov.owner(a);
    }

    public static long[] arr(int cid, int n, int e) {
        return java.lang.BciCov.arr(cid, n, e);
    }

    /** The lookup of classes instrumented by bci before the entry counter moved into arr. */
    public static long[] arr(int cid, int n) {
        return java.lang.BciCov.arr(cid, n);
    }

    /** Per-test coverage: see the runtime jar's Cov.begin. */
    public static void begin(String test) {
        java.lang.BciCov.begin(test);
    }

    public static void end() {
        java.lang.BciCov.end();
    }

    public static void end(String test) {
        java.lang.BciCov.end(test);
    }

    public static void parallel(String why) {
        java.lang.BciCov.parallel(why);
    }
}

package java.lang;

/** No-op probe targets for the rewrite tests: patched into java.base so every module can call them. */
public final class BciProbe {
    private BciProbe() {}
    public static void enter(int id) {}
    public static void exit(int id) {}
    public static void unwind(int id) {}
    /** The agent's form: pure leaves, and frame tokens kept in a local. */
    public static void leafEnter(int id) {}
    public static void leafExit(int id) {}
    public static int enterT(int id) { return -1; }
    public static void exitT(int token) {}
    public static void unwindT(int token) {}
    public static long now() { return 0L; }
    public static void timed(int id, long start) {}
    private static long[] counters;
    /** Coverage: one shared array (the tests assert no class has more than 32768 counters). */
    public static long[] arr(int classId, int n) {
        long[] a = counters;
        if (a == null) counters = a = new long[32768];
        return a;
    }
    /** Coverage, the fast half of the lookup of classes with constant ids (never misses). */
    public static long[] find(int classId) {
        return arr(classId, 0);
    }
    /** Coverage, the slow half of the lookup. */
    public static long[] create(int classId, int n) {
        return arr(classId, n);
    }
    /**
     * Coverage, from <clinit>: no array for the class's owner (as the agent's runtime before
     * VMInit), so lookups go through find: Thread.currentThread() is not linked early in the
     * JVM's startup, and linking it runs the covered ClassLoader code.
     */
    public static long[] own(int classId, int n) {
        return null;
    }
    /** Coverage: no owner without an array. */
    public static Object owner(long[] a) {
        return null;
    }
    /** Coverage, the lookup that also counts the method entry (counter {@code entry}). */
    public static long[] arr(int classId, int n, int entry) {
        long[] a = arr(classId, n);
        a[entry]++;
        return a;
    }
}

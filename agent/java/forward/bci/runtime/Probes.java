package bci.runtime;

/**
 * bci.runtime.Probes as the agent defines it (boot loader, at VMInit) when its runtime is
 * java.lang.BciProbes (the built-in rules): classes instrumented by {@code bci instrument} call
 * this class, and every call goes on to the agent's runtime, so that they are recorded with the
 * rest of the program. Small enough for the JIT to inline into the caller.
 */
public final class Probes {
    private Probes() {}

    public static void enter(int id) {
        java.lang.BciProbes.enter(id);
    }

    public static void exit(int id) {
        java.lang.BciProbes.exit(id);
    }

    public static void unwind(int id) {
        java.lang.BciProbes.unwind(id);
    }

    public static int enterT(int id) {
        return java.lang.BciProbes.enterT(id);
    }

    public static void exitT(int t) {
        java.lang.BciProbes.exitT(t);
    }

    public static void unwindT(int t) {
        java.lang.BciProbes.unwindT(t);
    }

    public static void leafEnter(int id) {
        java.lang.BciProbes.leafEnter(id);
    }

    public static void leafExit(int id) {
        java.lang.BciProbes.leafExit(id);
    }

    public static long now() {
        return java.lang.BciProbes.now();
    }

    public static void timed(int id, long start) {
        java.lang.BciProbes.timed(id, start);
    }
}

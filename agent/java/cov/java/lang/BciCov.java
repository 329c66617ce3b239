package java.lang;

/**
 * Coverage counters of the agent ({@code coverage=y}): java.lang.BciCov, defined by the agent in
 * the boot loader at early VMStart (a member of java.base, so every class, JDK included, can call
 * it). Instrumented code asks once per method call for the calling thread's counter array of its
 * class (through the class's {@code bci$a}: the array {@link #own} gave the thread that
 * initialized the class, kept in the class's static finals; for other threads {@code bci$b}:
 * {@link #find}, and {@link #create} on a miss; interfaces of class files before version 52:
 * {@link #arr(int, int, int)}) and bumps counters
 * in it with plain {@code long} increments: every array has one writer, so counts are exact
 * without a lock or an atomic on the path.
 *
 * <p>A thread's arrays hang off a field the agent adds to java.lang.Thread ({@code bci$c}, a
 * {@code long[][]} indexed by class id): two loads from the thread to the array. No ThreadLocal
 * and no other JDK method: this class is not instrumented, but the JDK classes it would call are,
 * and would call back into it. The slow path (a thread's first call into a class) allocates and
 * links arrays under the class lock and calls nothing but natives.
 *
 * <p>When a thread ends the agent calls {@link #ended} on it (JVMTI ThreadEnd): its arrays are
 * added to a shared sum and dropped. The agent reads the sums with {@link #snapshot} at exit and
 * on SIGQUIT.
 *
 * <p>Before VMInit, and if Thread could not get the field ({@link #FIELD} false), every thread
 * shares one array per class: racy increments, counts may be low under contention (without
 * the field the agent says so; before VMInit the JVM's startup code runs on one thread, with
 * the Reference Handler, Finalizer and Signal Dispatcher threads started but mostly waiting).
 *
 * <p>When the {@code include=} patterns cannot match a class under java., jdk. or sun. (where
 * every class loaded before VMStart is, and ThreadLocal), the agent runs without the early
 * class hook, which keeps the JVM's class-data sharing (CDS) on: Thread is loaded before the
 * hook sees it and gets no field. Then ({@link #LOCAL}, set at VMInit) threads find their
 * tables through a ThreadLocal, whose code is not covered and so cannot call back here.
 */
public final class BciCov {
    private BciCov() {}

    /**
     * Whether threads use their own arrays (the field {@code bci$c} of java.lang.Thread): set by
     * the agent at VMInit when Thread has the field. Before that (JVM startup: classes are
     * covered from the first one loaded) {@code Thread.currentThread()} may not be linked yet
     * (its lookup runs covered ClassLoader code, which would call back here), and every thread
     * counts in the shared arrays.
     */
    private static boolean FIELD;

    /**
     * Whether threads find their tables through {@link #locals} instead of the Thread field:
     * set by the agent at VMInit when it runs without the early hook (see the class comment).
     */
    private static boolean LOCAL;

    /** The calling thread's table without the Thread field ({@link #LOCAL}). */
    private static ThreadLocal<long[][]> locals;

    /** Called by the agent at VMInit without the early hook: per-thread tables from now on. */
    static void local() {
        locals = new ThreadLocal<>();
        LOCAL = true;
    }

    /**
     * Whether the class lock is taken through {@link #lock0}/{@link #unlock0} (JNI
     * MonitorEnter/MonitorExit on this class, the monitor {@code synchronized} takes): set by
     * {@link #useJniLock} at VMInit. JDK 24+ (JEP 491): a virtual thread that waits for a
     * monitor in {@code synchronized} unmounts, and only runs again once the JDK's
     * VirtualThread-unblocker thread and a carrier have resumed it; both run covered JDK code,
     * whose first call into a class takes this lock: the JVM hung, every thread waiting for it.
     * A virtual thread waiting in a native frame stays mounted (pinned), and one holding a
     * monitor taken through JNI cannot unmount, so the lock's owner always runs. Before VMInit
     * (no virtual threads yet, the natives not linked) {@code synchronized}.
     */
    private static boolean jniLock;

    /** Takes this class's monitor through JNI (the agent's lock_native); whether it holds it. */
    private static native boolean lock0();

    /** Leaves the monitor {@link #lock0} took. */
    private static native void unlock0();

    /**
     * Called by the agent at VMInit: links {@link #lock0} and {@link #unlock0} (the VM finds
     * them by their JNI names in the agent library) and uses them from now on.
     */
    static void useJniLock() {
        try {
            if (lock0()) {
                unlock0();
                jniLock = true;
            }
        } catch (Throwable e) {
            // not linked (a library without them): synchronized, as before VMInit
        }
    }

    /** The table of {@code th}, which must be the calling thread; null if none. */
    private static long[][] tab(Thread th) {
        return FIELD ? th.bci$c : LOCAL ? locals.get() : null;
    }

    /** Sets the table of {@code th}, which must be the calling thread (null: none). */
    private static void setTab(Thread th, long[][] t) {
        if (FIELD) {
            th.bci$c = t;
        } else if (t != null) {
            locals.set(t);
        } else {
            locals.remove();
        }
    }

    /** Live threads with arrays, and their tables (0 .. live). Guarded by the class lock. */
    private static Thread[] threads = new Thread[16];
    private static long[][][] tabs = new long[16][][];
    private static int live;
    /** Sums of ended threads (or the shared arrays without the field), by class id. */
    private static long[][] folded = new long[256][];
    /** Set when an array could not be allocated: counts after that are missing. */
    private static volatile boolean lost;

    /**
     * The most counters a class has (the instrumenter leaves classes with more uninstrumented),
     * and the array a class gets when its own cannot be allocated (out of memory): its counts
     * are lost, the method runs on. Allocated up front (256 KB), so it is there when nothing
     * else can be allocated, and long enough for every class.
     */
    static final int MAX_COUNTERS = 32768;

    private static final long[] SINK = new long[MAX_COUNTERS];

    /**
     * On entry to a method: the calling thread's counters of class {@code cid}, which has
     * {@code n} counters, after adding one to the method's entry counter {@code e} in them.
     */
    public static long[] arr(int cid, int n, int e) {
        long[] a = arr(cid, n);
        // unconditional: e is the method's highest counter (below n, and arrays have n), so
        // once inlined this range check covers the method's other counters and C2 drops theirs
        a[e]++;
        return a;
    }

    /**
     * The fast half of the lookup, called by each class's own {@code bci$a(I)[J} (the
     * rewriter's coverage helper): the calling thread's counters of class {@code cid}, or null
     * if the thread has no array for the class yet (then the helper calls {@link #create}).
     * The helper adds one to the entry counter. No call in it, and at most 35 bytes of
     * bytecode (HotSpot's MaxInlineSize): C1 inlines it, as C2 does.
     */
    public static long[] find(int cid) {
        if (!FIELD) {
            return null; // without the field: create (the per-thread table in the ThreadLocal)
        }
        long[][] t = Thread.currentThread().bci$c;
        return t != null && cid < t.length ? t[cid] : null;
    }

    /** The slow half of the lookup (see {@link #find}): {@link #arr(int, int)}. */
    public static long[] create(int cid, int n) {
        return arr(cid, n);
    }

    /**
     * Arrays that a class's static final {@code bci$s} holds, by class id (see {@link #own}):
     * summed as they are at every snapshot, never folded, so counts made through them after
     * the owner's end event (a virtual thread runs JDK code after it) are not lost. Guarded by
     * the class lock.
     */
    private static long[][] owned = new long[256][];

    /**
     * Called by an instrumented class's {@code <clinit>} first (the rewriter's coverage
     * prologue): the initializing thread's counters of class {@code cid} (the array its lookups
     * find), which the class keeps in its static final {@code bci$s} and reaches from that
     * thread without a lookup; null if the class gets none (no thread field yet, the class id
     * already owned by another thread's array, out of memory).
     */
    public static long[] own(int cid, int n) {
        if (!(FIELD || LOCAL) || cid <= 0) {
            return null;
        }
        long[] a = arr(cid, n);
        if (a == SINK) {
            return null;
        }
        if (jniLock && lock0()) {
            try {
                return ownLocked(cid, a);
            } finally {
                unlock0();
            }
        }
        synchronized (BciCov.class) {
            return ownLocked(cid, a);
        }
    }

    /** {@link #own}'s locked part: {@code a} becomes the owned array of {@code cid} if none is. */
    private static long[] ownLocked(int cid, long[] a) {
        long[][] o = owned;
        if (cid >= o.length) {
            long[][] g = new long[cid < 2 * o.length ? 2 * o.length : cid + 1][];
            System.arraycopy(o, 0, g, 0, o.length);
            owned = o = g;
        }
        if (o[cid] == null) {
            o[cid] = a;
        }
        return o[cid] == a ? a : null;
    }

    /**
     * The owner a class keeps with the array {@link #own} gave it: the calling thread, or null
     * with no array (then the class's lookup never asks for the current thread).
     */
    public static Object owner(long[] a) {
        return a == null ? null : Thread.currentThread();
    }

    /** Whether {@code a} is the owned array of class {@code c}. Holds the class lock. */
    private static boolean isOwned(int c, long[] a) {
        return c < owned.length && owned[c] == a;
    }

    /** The calling thread's counters of class {@code cid}, which has {@code n} counters. */
    public static long[] arr(int cid, int n) {
        if (FIELD || LOCAL) {
            long[][] t = tab(Thread.currentThread());
            if (t != null && cid < t.length) {
                long[] a = t[cid];
                if (a != null) {
                    return a;
                }
            }
        } else {
            long[][] f = folded;
            if (cid < f.length) {
                long[] a = f[cid];
                if (a != null) {
                    return a;
                }
            }
        }
        return slow(cid, n);
    }

    private static long[] slow(int cid, int n) {
        try {
            if (cid <= 0) {
                return sink(n);
            }
            if (jniLock && lock0()) {
                try {
                    return slowLocked(cid, n);
                } finally {
                    unlock0();
                }
            }
            synchronized (BciCov.class) {
                return slowLocked(cid, n);
            }
        } catch (Throwable e) {
            // out of memory (or worse): this call's counts are lost, the program goes on
            lost = true;
            return sink(n);
        }
    }

    /** {@link #slow}'s locked part. Holds the class lock. */
    private static long[] slowLocked(int cid, int n) {
        if (!(FIELD || LOCAL)) {
            return slot(folded(cid), cid, n);
        }
        Thread th = Thread.currentThread();
        long[][] t = tab(th);
        if (t == null) {
            t = new long[cid < 64 ? 64 : cid + 1][];
            track(th, t);
            setTab(th, t);
        } else if (cid >= t.length) {
            int m = t.length * 2;
            long[][] g = new long[cid < m ? m : cid + 1][];
            System.arraycopy(t, 0, g, 0, t.length);
            retrack(th, g);
            setTab(th, t = g);
        }
        return slot(t, cid, n);
    }

    /** folded, grown to hold {@code cid}. Holds the class lock. */
    private static long[][] folded(int cid) {
        long[][] f = folded;
        if (cid >= f.length) {
            int m = f.length * 2;
            long[][] g = new long[cid < m ? m : cid + 1][];
            System.arraycopy(f, 0, g, 0, f.length);
            folded = f = g;
        }
        return f;
    }

    private static long[] slot(long[][] t, int cid, int n) {
        long[] a = t[cid];
        if (a == null) {
            t[cid] = a = new long[n];
        } else if (a.length < n) {
            // the same id with more counters cannot happen (ids name one class); be safe
            long[] g = new long[n];
            System.arraycopy(a, 0, g, 0, a.length);
            t[cid] = a = g;
        }
        return a;
    }

    private static long[] sink(int n) {
        if (n <= SINK.length) {
            return SINK;
        }
        try {
            // more counters than the instrumenter gives a class: not ours
            return new long[n];
        } catch (Throwable again) {
            return SINK;
        }
    }

    private static void track(Thread th, long[][] t) {
        if (live == threads.length) {
            Thread[] g = new Thread[live * 2];
            System.arraycopy(threads, 0, g, 0, live);
            long[][][] h = new long[live * 2][][];
            System.arraycopy(tabs, 0, h, 0, live);
            threads = g;
            tabs = h;
        }
        threads[live] = th;
        tabs[live] = t;
        live++;
    }

    private static void retrack(Thread th, long[][] t) {
        for (int i = live - 1; i >= 0; i--) {
            if (threads[i] == th) {
                tabs[i] = t;
                return;
            }
        }
        track(th, t);
    }

    /** Called by the agent on a thread that ends: its counts go to the shared sums. */
    static void ended(Thread th) {
        // (the agent calls it on the ending thread: JVMTI ThreadEnd and VirtualThreadEnd)
        if (!(FIELD || LOCAL) || th == null || (!FIELD && th != Thread.currentThread())) {
            return;
        }
        if (jniLock && lock0()) {
            try {
                endedLocked(th);
            } finally {
                unlock0();
            }
            return;
        }
        synchronized (BciCov.class) {
            endedLocked(th);
        }
    }

    /** {@link #ended}'s locked part. Holds the class lock. */
    private static void endedLocked(Thread th) {
        long[][] t = tab(th);
        if (t == null) {
            return;
        }
        setTab(th, null);
        add(t);
        for (int i = live - 1; i >= 0; i--) {
            if (threads[i] == th) {
                live--;
                threads[i] = threads[live];
                tabs[i] = tabs[live];
                threads[live] = null;
                tabs[live] = null;
                break;
            }
        }
    }

    /** Adds a table into folded, but not owned arrays (summed apart). Holds the class lock. */
    private static void add(long[][] t) {
        long[][] f = folded(t.length - 1);
        for (int c = 0; c < t.length; c++) {
            long[] a = t[c];
            if (a != null && !isOwned(c, a)) {
                addInto(f, c, a);
            }
        }
    }

    private static void addInto(long[][] f, int c, long[] a) {
        long[] s = f[c];
        if (s == null || s.length < a.length) {
            long[] g = new long[a.length];
            if (s != null) {
                System.arraycopy(s, 0, g, 0, s.length);
            }
            f[c] = s = g;
        }
        for (int i = 0; i < a.length; i++) {
            long x = s[i] + a[i];
            s[i] = x < 0 ? Long.MAX_VALUE : x; // saturate
        }
    }

    /**
     * Sums over every thread, flattened: {@code cid, n, count × n} per class id that has counts,
     * then {@code -1} if counts were lost. Live threads' arrays are read as they are (a dump while
     * they run is a snapshot).
     */
    static long[] snapshot() {
        if (jniLock && lock0()) {
            try {
                return flatten(sums(), lost);
            } finally {
                unlock0();
            }
        }
        synchronized (BciCov.class) {
            return flatten(sums(), lost);
        }
    }

    /** Sums over every thread by class id. Holds the class lock. */
    private static long[][] sums() {
        long[][] sum = new long[folded.length][];
        for (int c = 0; c < folded.length; c++) {
            if (folded[c] != null) {
                addInto(sum, c, folded[c]);
            }
        }
        for (int i = 0; i < live; i++) {
            long[][] t = tabs[i];
            if (t.length > sum.length) {
                long[][] g = new long[t.length][];
                System.arraycopy(sum, 0, g, 0, sum.length);
                sum = g;
            }
            for (int c = 0; c < t.length; c++) {
                if (t[c] != null && !isOwned(c, t[c])) {
                    addInto(sum, c, t[c]);
                }
            }
        }
        if (owned.length > sum.length) {
            long[][] g = new long[owned.length][];
            System.arraycopy(sum, 0, g, 0, sum.length);
            sum = g;
        }
        for (int c = 0; c < owned.length; c++) {
            if (owned[c] != null) {
                addInto(sum, c, owned[c]);
            }
        }
        return sum;
    }

    /** {@code cid, n, count × n} per class id with counts, then {@code -1} if {@code lost}. */
    private static long[] flatten(long[][] sum, boolean lost) {
        int len = lost ? 1 : 0;
        for (int c = 0; c < sum.length; c++) {
            if (sum[c] != null) {
                len += 2 + sum[c].length;
            }
        }
        long[] out = new long[len];
        int k = 0;
        for (int c = 0; c < sum.length; c++) {
            if (sum[c] != null) {
                out[k++] = c;
                out[k++] = sum[c].length;
                System.arraycopy(sum[c], 0, out, k, sum[c].length);
                k += sum[c].length;
            }
        }
        if (lost) {
            out[k] = -1;
        }
        return out;
    }

    /** The test running now (null: none) and the sums when it began. Guarded by the class lock. */
    private static String test;
    private static long[][] testBase;
    /** Tests seen, and per test what was counted while it ran, by class id. Class lock. */
    private static String[] testNames = new String[0];
    private static long[][][] testSums = new long[0][][];

    /**
     * Test {@code name} begins (bci.runtime.Cov.begin, e.g. from the runtime jar's JUnit
     * listener): what every thread counts until {@link #end} is also the test's (a test still
     * running ends first).
     */
    public static void begin(String name) {
        String n = name == null ? "" : name;
        if (jniLock && lock0()) {
            try {
                beginLocked(n);
            } finally {
                unlock0();
            }
            return;
        }
        synchronized (BciCov.class) {
            beginLocked(n);
        }
    }

    /** {@link #begin}'s locked part. Holds the class lock. */
    private static void beginLocked(String n) {
        if (parallel) {
            overlap(n);
        }
        opened(n);
        close();
        testBase = sums();
        test = n;
    }

    /**
     * Test {@code name} ends (bci.runtime.Cov.end(String), the JUnit listener's end): as
     * {@link #end()} when it is the test running, else nothing more is counted for it (another
     * test's begin closed its window). A test that began before it ended overlapped it: see
     * {@link #closed}; the overlaps are kept in the test's sums at class id 0, which no class
     * has (the data's OVERLAP_CLASS).
     */
    public static void end(String name) {
        String n = name == null ? "" : name;
        String said;
        if (jniLock && lock0()) {
            try {
                said = endLocked(n);
            } finally {
                unlock0();
            }
        } else {
            synchronized (BciCov.class) {
                said = endLocked(n);
            }
        }
        if (said != null) {
            // said outside the lock: the stream's own lock may be held by a virtual thread
            // that waits for a carrier, and carriers may need the class lock
            System.err.println(said);
        }
    }

    /** {@link #end(String)}'s locked part: the overlap message to say, or null. */
    private static String endLocked(String n) {
        if (n.equals(test)) {
            close();
        }
        return closed(n);
    }

    /**
     * Tests begun and not yet ended (the last {@link #MAX_OPEN}: a harness that only calls
     * begin leaves them here), each with the tests that began while it was open (at most
     * {@link #MAX_OPEN} names). Class lock.
     */
    private static String[] openNames = new String[0];
    private static String[][] openLater = new String[0][];
    private static final int MAX_OPEN = 64;
    private static boolean overlapSaid;
    /** An open test was forgotten (more than {@link #MAX_OPEN} open): its end is not unknown. */
    private static boolean forgot;
    /** An end named a test that was not open: said once. */
    private static boolean unknownEndSaid;

    /**
     * The message of an end by name of a test that is not open (never began, or ended already):
     * ignored, said once on stderr, as an overlap is; null when said before.
     */
    private static String unknownEnd(String n) {
        if (forgot || unknownEndSaid) {
            return null;
        }
        unknownEndSaid = true;
        return "bci: per-test coverage: end(\"" + n + "\") names no test that began and has not"
                + " ended (" + (test == null ? "no test is running" : "the test running: " + test)
                + "); ignored: each begin needs an end of the same name (or end())";
    }

    /** Test {@code n} begins: it is open, and began while every open test ran. */
    private static void opened(String n) {
        for (int i = 0; i < openNames.length; i++) {
            if (openLater[i].length < MAX_OPEN) {
                openLater[i] = plus(openLater[i], n);
            }
        }
        if (openNames.length == MAX_OPEN) {
            openNames = minus(openNames, 0);
            openLater = minus(openLater, 0);
            forgot = true;
        }
        openNames = plus(openNames, n);
        openLater = plus(openLater, new String[0]);
    }

    /**
     * Test {@code n} ends by name: when tests began while it was open (tests run in parallel),
     * it and they overlapped (their counts cannot be told apart: what any thread counts goes
     * to the one window open): recorded for each, said once on stderr (the message returned,
     * else null).
     */
    private static String closed(String n) {
        for (int i = 0; i < openNames.length; i++) {
            if (!openNames[i].equals(n)) {
                continue;
            }
            String[] later = openLater[i];
            openNames = minus(openNames, i);
            openLater = minus(openLater, i);
            if (later.length == 0) {
                return null;
            }
            overlap(n);
            for (String b : later) {
                if (!b.equals(n)) {
                    overlap(b);
                }
            }
            if (overlapSaid) {
                return null;
            }
            overlapSaid = true;
            return "bci: per-test coverage: tests ran at the same time (" + n
                    + " ended after " + later[0] + " began): the per-test counts of tests that"
                    + " overlap are not separable; run tests one at a time for exact per-test"
                    + " coverage (JUnit: junit.jupiter.execution.parallel.enabled=false)";
        }
        return unknownEnd(n);
    }

    private static String[] plus(String[] a, String x) {
        String[] r = new String[a.length + 1];
        System.arraycopy(a, 0, r, 0, a.length);
        r[a.length] = x;
        return r;
    }

    private static String[][] plus(String[][] a, String[] x) {
        String[][] r = new String[a.length + 1][];
        System.arraycopy(a, 0, r, 0, a.length);
        r[a.length] = x;
        return r;
    }

    private static String[] minus(String[] a, int i) {
        String[] r = new String[a.length - 1];
        System.arraycopy(a, 0, r, 0, i);
        System.arraycopy(a, i + 1, r, i, a.length - i - 1);
        return r;
    }

    private static String[][] minus(String[][] a, int i) {
        String[][] r = new String[a.length - 1][];
        System.arraycopy(a, 0, r, 0, i);
        System.arraycopy(a, i + 1, r, i, a.length - i - 1);
        return r;
    }

    /** Tests run in parallel: see {@link #parallel}. Class lock. */
    private static boolean parallel;

    /**
     * Tests run in parallel from now on (bci.runtime.Cov.parallel, the JUnit listener's when
     * the test plan is configured for parallel execution or runs on more than one thread,
     * {@code why}): code other threads run during a test's window counts as the test's, not
     * only other tests' (which {@link #closed} tells) but code of no test (another class's
     * {@code @BeforeAll}, constructors); every test open now or begun later is recorded as
     * overlapping, and it is said once on stderr (as an overlap is).
     */
    public static void parallel(String why) {
        String said;
        if (jniLock && lock0()) {
            try {
                said = parallelLocked(why);
            } finally {
                unlock0();
            }
        } else {
            synchronized (BciCov.class) {
                said = parallelLocked(why);
            }
        }
        if (said != null) {
            // said outside the lock (see end(String))
            System.err.println(said);
        }
    }

    /** {@link #parallel}'s locked part: the message to say, or null. */
    private static String parallelLocked(String why) {
        if (!parallel) {
            parallel = true;
            for (String n : openNames) {
                overlap(n);
            }
        }
        if (overlapSaid) {
            return null;
        }
        overlapSaid = true;
        return "bci: per-test coverage: tests run in parallel (" + why + "): code other"
                + " threads run during a test (other tests, another class's @BeforeAll, test"
                + " instances' constructors) counts as its, so per-test counts are not separable;"
                + " run tests one at a time for exact per-test coverage (JUnit:"
                + " junit.jupiter.execution.parallel.enabled=false)";
    }

    /** One more overlap of test {@code name}: its sums' counter at class id 0. */
    private static void overlap(String name) {
        int t = testIndex(name);
        long[][] sum = testSums[t];
        if (sum.length == 0) {
            testSums[t] = sum = new long[1][];
        }
        if (sum[0] == null) {
            sum[0] = new long[1];
        }
        sum[0][0]++;
    }

    /** The index of test {@code name} in testNames (added if new). */
    private static int testIndex(String name) {
        int t = 0;
        while (t < testNames.length && !testNames[t].equals(name)) {
            t++;
        }
        if (t == testNames.length) {
            String[] n = new String[t + 1];
            long[][][] v = new long[t + 1][][];
            System.arraycopy(testNames, 0, n, 0, t);
            System.arraycopy(testSums, 0, v, 0, t);
            n[t] = name;
            v[t] = new long[0][];
            testNames = n;
            testSums = v;
        }
        return t;
    }

    /** The running test (if any) ends: the counts since its {@link #begin} are added to it. */
    public static void end() {
        if (jniLock && lock0()) {
            try {
                endLocked();
            } finally {
                unlock0();
            }
            return;
        }
        synchronized (BciCov.class) {
            endLocked();
        }
    }

    /** {@link #end()}'s locked part. Holds the class lock. */
    private static void endLocked() {
        String t = test;
        close();
        if (t != null) {
            // ended, though not by name: later tests did not overlap it
            for (int i = 0; i < openNames.length; i++) {
                if (openNames[i].equals(t)) {
                    openNames = minus(openNames, i);
                    openLater = minus(openLater, i);
                    break;
                }
            }
        }
    }

    /** The running test's window (if any) closes: the counts since its begin are added to it. */
    private static void close() {
        if (test == null) {
            return;
        }
        long[][] now = sums();
        int t = testIndex(test);
        long[][] sum = testSums[t];
        if (sum.length < now.length) {
            long[][] g = new long[now.length][];
            System.arraycopy(sum, 0, g, 0, sum.length);
            testSums[t] = sum = g;
        }
        for (int c = 0; c < now.length; c++) {
            long[] a = now[c];
            if (a == null) {
                continue;
            }
            long[] b = c < testBase.length ? testBase[c] : null;
            for (int i = 0; i < a.length; i++) {
                long x = a[i] - (b != null && i < b.length ? b[i] : 0);
                if (x > 0) {
                    if (sum[c] == null || sum[c].length < a.length) {
                        long[] g = new long[a.length];
                        if (sum[c] != null) {
                            System.arraycopy(sum[c], 0, g, 0, sum[c].length);
                        }
                        sum[c] = g;
                    }
                    long y = sum[c][i] + x;
                    sum[c][i] = y < 0 ? Long.MAX_VALUE : y; // saturate
                }
            }
        }
        test = null;
        testBase = null;
    }

    /**
     * Per-test counts, flattened for the agent: per test {@code -2, length, chars × length},
     * then its classes as in {@link #snapshot} (without the lost marker).
     */
    static long[] tests() {
        if (jniLock && lock0()) {
            try {
                return testsLocked();
            } finally {
                unlock0();
            }
        }
        synchronized (BciCov.class) {
            return testsLocked();
        }
    }

    /** {@link #tests}'s locked part. Holds the class lock. */
    private static long[] testsLocked() {
        long[][] parts = new long[testNames.length][];
        int len = 0;
        for (int t = 0; t < testNames.length; t++) {
            parts[t] = flatten(testSums[t], false);
            len += 2 + testNames[t].length() + parts[t].length;
        }
        long[] out = new long[len];
        int k = 0;
        for (int t = 0; t < testNames.length; t++) {
            String n = testNames[t];
            out[k++] = -2;
            out[k++] = n.length();
            for (int i = 0; i < n.length(); i++) {
                out[k++] = n.charAt(i);
            }
            System.arraycopy(parts[t], 0, out, k, parts[t].length);
            k += parts[t].length;
        }
        return out;
    }
}

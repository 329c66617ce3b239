package bci.runtime;

import jdk.internal.vm.annotation.DontInline;

/**
 * The runtime that instrumented methods call: {@code enter(id)} at entry, {@code exit(id)} before
 * every return and {@code unwind(id)} in the catch-all handler before the re-throw.
 *
 * <p>build.rs compiles this file three times: as bci.runtime.Probes and, renamed, twice as
 * java.lang.BciProbes (a member of java.base): once finding a thread's state in the field
 * {@code bci$t} that the agent adds to java.lang.Thread (the {@code @thread-lookup field}
 * block), once (used if Thread did not get the field) like bci.runtime.Probes, through the last
 * thread seen and a table keyed by identity hash (the {@code @thread-lookup fallback} block).
 * The agent defines one of them in the boot loader (java.lang.BciProbes at early VMStart,
 * bci.runtime.Probes at VMInit) and sets its static fields through JNI. Everything reachable from the probes uses only this class, arrays,
 * {@code System.arraycopy}, {@code Thread.currentThread}, {@code System.identityHashCode} and
 * {@code System.nanoTime}: native methods, which are never instrumented. A JDK method with
 * bytecode called from a probe would call a probe again; the only place that does (thread
 * registration: {@code new T}, {@code Thread.getName}) marks the thread as {@link #registering}
 * and every probe call it makes returns at once.
 *
 * <p>All recording is per thread, without locks or atomics: a thread finds its own {@link T}
 * in a field of its Thread object (no shared "last thread" that threads would keep writing).
 * Only the first probe of a thread takes the class lock (to register). Counts are exact; times come from the clock chosen with
 * {@code clock=}.
 */
public final class Probes {
    private Probes() {}

    /**
     * Probes record only while this is true (set by the agent at VMInit, cleared at VM death).
     * Not volatile on purpose: a volatile load in every probe stops the JIT from combining the
     * loads of enter and exit (measured: 3.1 s -> 2.4 s on the Fib micro).
     */
    static boolean on;
    /**
     * on and clock=sample: the probes take their inlined fast path (no clock to read). Read
     * first, before Thread.currentThread: before VMInit, calling that native can mean linking
     * it through ClassLoader.findNative, which is instrumented and would come back here.
     */
    static boolean fast;
    /**
     * 0 = sample: probes do not read a clock; the agent's sampler thread calls {@link #sample}
     * every interval and charges each thread's CPU time to its top frame (self) and to every
     * method on its shadow stack (total). 1 = System.nanoTime at every probe,
     * 2 = thread CPU time at every probe.
     */
    static int clock;
    /** clock != 0: probes time every call. */
    static boolean timed;
    /** Number of frames in a call path (HPROF depth). */
    static int depth = 4;
    /**
     * The live threads' states, by slot (null = free; a slot is reused once its thread ended).
     * Written under the class lock; {@link #version} changes with every change.
     */
    static T[] all = new T[64];
    /** Slots in use or used before (all[nall..] are null). */
    static int nall;
    /** Free slots below nall, a stack. */
    static int[] free = new int[16];
    static int nfree;
    /** Changes whenever a slot gets or loses a thread (the sampler then re-reads the slots). */
    static long version;
    /** Serial of the next registered thread (unique; the sampler tells reused slots apart). */
    static long nextSerial;
    /** The thread currently inside registration: its probe calls are ignored. */
    static Thread registering;

    /** thread=y: the first {@link #ROWS} threads keep their own rows, the others share one. */
    static boolean perThread;
    /** thread=y: most threads with rows of their own in the report (the others: "other threads"). */
    static final int ROWS = 256;
    static int rowsUsed;
    /** thread=y: ended threads with rows, by row (null: that row's thread is live). */
    static A[] rows = new A[0];
    /**
     * Ended threads folded together: all of them (thread=n), those without a row (thread=y).
     * Bounded by the number of distinct call paths, not by the number of threads.
     */
    static A ended = new A("other threads");
    static long rowsBytes;
    /** The state a thread's field points to once the thread ended (field build; see ended()). */
    static final T GONE = new T(null, -2, "ended", 1, true);

    /**
     * Most bytes the recorded data may take (a quarter of the largest heap; 0 = no limit):
     * checked when a thread registers, against the live threads (at the average size of the
     * threads that ended so far) plus the aggregates. Above it recording stops: a heap that
     * fills with profile data makes the program crawl from one full GC to the next.
     */
    static long budget;
    /** Tests only (BCIAGENT_TEST_BUDGET): the budget in bytes instead of a quarter of the heap. */
    static long testBudget;
    static int nLive;
    static long endedBytes;
    static long endedCount;

    /** Why recording stopped early (null: it did not), for the report. */
    static String failure;
    /** Released when the runtime runs out of memory, so that the report can still be written. */
    static long[] reserve = new long[1 << 16];

    static native long cpuNanos();

    static long clockNow() {
        if (clock == 1) {
            return System.nanoTime();
        }
        return cpuNanos();
    }

    /**
     * Stops recording for good after {@code e} (out of memory inside a probe or the runtime):
     * the program goes on unprofiled and the report says so. Never throws.
     */
    static void fail(Throwable e, String where) {
        fast = false;
        on = false;
        reserve = null;
        if (failure == null) {
            failure = where;
        }
        dropLive();
    }

    /**
     * After a failure: the live threads' data is dropped too (their fields point to GONE, their
     * slots are emptied), giving the memory back to the program; no thread registers again.
     * The aggregates of threads that ended before stay for the report.
     */
    static void dropLive() {
        synchronized (Probes.class) {
            for (int i = 0; i < nall && i < all.length; i++) {
                T s = all[i];
                all[i] = null;
                if (s != null) {
                    try {
                        unpublish(s);
                    } catch (Throwable e) {
                        // the slot is empty already; the thread's next probe finds nothing
                    }
                }
            }
            nall = 0;
            nfree = 0;
            nLive = 0;
            version++;
        }
    }

    /** Sampler-owned: sampled total time per method (all threads), and a mark per method. */
    static long[] sTotal = new long[0];
    static int[] sMark = new int[0];
    static int mark;

    /**
     * Called by the agent's sampler thread every interval with {@code in = [version, (serial,
     * ns)*]}: per slot, the serial of the thread the agent read and the CPU time that thread
     * used since the previous call, charged to the thread's current call path (self) and once
     * to every method on its shadow stack (total), if the slot still holds that thread. Reads
     * other threads' stacks racily; writes only sampler-owned data. Returns null if the slots
     * did not change since {@code version}, else {@code [version, serial per slot (-1 free)]}.
     */
    public static long[] sample(long[] in) {
        synchronized (Probes.class) {
            try {
                T[] a = all;
                int n = nall;
                if (n > a.length) {
                    n = a.length;
                }
                if (n > (in.length - 1) / 2) {
                    n = (in.length - 1) / 2;
                }
                for (int i = 0; i < n; i++) {
                    T s = a[i];
                    long ns = in[2 + 2 * i];
                    if (s != null && s.serial == in[1 + 2 * i] && ns > 0) {
                        s.sample(ns, ++mark);
                    }
                }
                if (in.length > 0 && in[0] == version) {
                    return null;
                }
                long[] out = new long[1 + nall];
                out[0] = version;
                for (int i = 0; i < nall; i++) {
                    T s = all[i];
                    out[1 + i] = s == null ? -1 : s.serial;
                }
                return out;
            } catch (OutOfMemoryError e) {
                fail(e, "out of memory in the sampler");
                return null;
            }
        }
    }

    /** The thread in slot {@code i} (for the sampler), null if free. */
    public static Thread thread(int i) {
        synchronized (Probes.class) {
            T s = i >= 0 && i < nall ? all[i] : null;
            return s == null ? null : s.thread;
        }
    }

    /** Adds a sample to method {@code id}'s total, once per mark (recursion). */
    static void charge(int id, long ns, int mk) {
        if (id >= sMark.length) {
            int n = sMark.length < 64 ? 64 : sMark.length;
            while (n <= id) {
                n *= 2;
            }
            sMark = T.copy(sMark, n);
            sTotal = T.copy(sTotal, n);
        }
        if (sMark[id] != mk) {
            sMark[id] = mk;
            sTotal[id] += ns;
        }
    }

    // What the JIT inlines into an instrumented method is a short fast path: entry is one
    // lookup in a per-thread direct-mapped cache (context node, method) -> call-path node, one
    // increment in the same entry and the frame's stores; exit compares and pops. Everything
    // else is in enter0/exit0, which are @DontInline (honoured for boot-loader classes):
    // inlining the whole recording code at every call site made C2 spend most of a javac run
    // compiling (perf: 58 % of the CPU in its register allocator), and each call left in an
    // inlined probe costs C2 too. With a per-call clock (`fast` false) every probe goes to
    // enter0/exit0.

    public static void enter(int id) {
        if (!fast) {
            if (on) {
                enter0(id);
            }
            return;
        }
        T s = cur();
        if (s != null) {
            int b = s.sp;
            long[] fr = s.fr;
            if (b + 8 <= fr.length) {
                // fr[0..8) is the root frame: there is always a caller's context to read
                int ctx = (int) fr[b - 7];
                long[] dm = s.dm;
                int h = slot(dm, ctx, id);
                if (dm[h] == (((long) ctx << 32) | id)) {
                    long v = dm[h + 1];
                    dm[h + 2]++;
                    int c = (int) (v >>> 32);
                    fr[b] = ((long) id << 32) | (v & 0xFFFFFFFFL);
                    fr[b + 1] = c;
                    s.sp = b + 8;
                    return;
                }
            }
        }
        enter0(id);
    }

    /** Index of the direct-mapped cache entry of (ctx, id) in {@code dm} (see T.dm). */
    static int slot(long[] dm, int ctx, int id) {
        return ((ctx * 0x9E3779B1 + id) << 2) & (dm.length - 4);
    }

    public static void exit(int id) {
        if (!fast) {
            if (on) {
                exit0(id);
            }
            return;
        }
        // No call on the paths taken once a thread is registered (a call in every inlined exit
        // costs C2 much): a frame that does not match is handled here too.
        T s = cur();
        if (s == null) {
            // the field build: a thread not registered yet; the fallback build: not the
            // thread seen last
            exit0(id);
        } else {
            int b = s.sp;
            long[] fr = s.fr;
            int k = b - 8;
            if ((int) (fr[k] >>> 32) != id) {
                // rare: frames above this method's lost their exit (e.g. an error inside a
                // probe), or it has none (entered before recording started)
                k -= 8;
                while (k >= 8 && (int) (fr[k] >>> 32) != id) {
                    k -= 8;
                }
                if (k < 8) {
                    if (!s.early) {
                        s.mismatches++;
                    }
                    return;
                }
                s.mismatches += (b - 8 - k) >> 3;
            }
            s.sp = k;
        }
    }

    // A pure leaf (the rewriter's choice: no instruction that can call, throw, allocate or
    // load or initialize a class) runs no other method while it runs: it pushes no frame.
    // Its entry counts its call path and marks it as the thread's running leaf (for the
    // sampler); its exit clears the mark. With a per-call clock it is an ordinary frame.

    public static void leafEnter(int id) {
        if (!fast) {
            if (on) {
                enter0(id);
            }
            return;
        }
        T s = cur();
        if (s != null) {
            // the context of the top frame's callees (fr[0..8) is the root frame)
            int ctx = (int) s.fr[s.sp - 7];
            long[] dm = s.dm;
            int h = slot(dm, ctx, id);
            if (dm[h] == (((long) ctx << 32) | id)) {
                dm[h + 2]++;
                s.leaf = (int) dm[h + 1];
                return;
            }
        }
        leafEnter0(id);
    }

    public static void leafExit(int id) {
        if (!fast) {
            if (on) {
                exit0(id);
            }
            return;
        }
        T s = cur();
        if (s != null) {
            s.leaf = 0;
        }
    }

    @DontInline
    static void leafEnter0(int id) {
        if (!on) {
            return;
        }
        T s = self();
        if (s != null) {
            try {
                s.leafEnter(id);
            } catch (OutOfMemoryError e) {
                fail(e, OOM_PROBE);
            } catch (RuntimeException e) {
                fail(e, BUG_PROBE);
            }
        }
    }

    public static void unwind(int id) {
        if (on) {
            exit0(id);
        }
    }

    /** The rules' `timer` probe: the start time, taken at method entry. */
    public static long now() {
        return System.nanoTime();
    }

    /** The rules' `timer` probe: method {@code id} started at {@code start} (from now()) ends. */
    public static void timed(int id, long start) {
        if (on) {
            timed0(id, System.nanoTime() - start);
        }
    }

    @DontInline
    static void timed0(int id, long ns) {
        T s = self();
        if (s != null && id >= 0) {
            try {
                s.timer(id, ns);
            } catch (OutOfMemoryError e) {
                fail(e, OOM_PROBE);
            } catch (RuntimeException e) {
                fail(e, BUG_PROBE);
            }
        }
    }

    static final String OOM_PROBE =
            "out of memory in a probe (the heap is full): recording stopped, counts are incomplete";

    static final String BUG_PROBE =
            "internal error in the runtime (a bug): recording stopped, counts are incomplete";

    @DontInline
    static void enter0(int id) {
        if (!on) {
            return;
        }
        T s = self();
        if (s != null) {
            try {
                s.enter(id);
            } catch (OutOfMemoryError e) {
                fail(e, OOM_PROBE);
            } catch (RuntimeException e) {
                fail(e, BUG_PROBE);
            }
        }
    }

    @DontInline
    static void exit0(int id) {
        if (!on) {
            return;
        }
        T s = self();
        if (s != null) {
            s.exit(id);
        }
    }

    // @thread-lookup fallback begin
    /** The last thread state looked up: one compare instead of a hash probe when it is ours. */
    static T last;
    /** Thread table, open addressing on identityHashCode(thread); only grows, under the class lock. */
    static volatile T[] table = new T[256];
    static int tableUsed;

    /** The current thread's state if at hand (the fast path), else null. */
    static T cur() {
        T s = last;
        return s != null && s.thread == Thread.currentThread() ? s : null;
    }

    /** The current thread's state, registered on first use; null while registering. */
    static T self() {
        Thread t = Thread.currentThread();
        T l = last;
        if (l != null && l.thread == t) {
            return l;
        }
        int h = System.identityHashCode(t);
        T[] tab = table;
        int m = tab.length - 1;
        int i = h & m;
        for (;;) {
            T s = tab[i];
            if (s == null) {
                return register(t, h);
            }
            if (s.thread == t) {
                if (!timed) {
                    last = s;
                }
                return s;
            }
            i = (i + 1) & m;
        }
    }

    /** Adds {@code s} to the thread table (under the class lock). */
    static void publish(T s) {
        T[] tab = table;
        int m = tab.length - 1;
        if ((tableUsed + 1) * 2 > tab.length) {
            T[] n = new T[tab.length * 2];
            int nm = n.length - 1;
            for (int k = 0; k < tab.length; k++) {
                T o = tab[k];
                if (o != null) {
                    int j = o.hash & nm;
                    while (n[j] != null) {
                        j = (j + 1) & nm;
                    }
                    n[j] = o;
                }
            }
            tab = n;
            m = nm;
        }
        int i = s.hash & m;
        while (tab[i] != null) {
            i = (i + 1) & m;
        }
        tab[i] = s;
        tableUsed++;
        table = tab;
    }

    /** Whether thread {@code t} has a state already (under the class lock). */
    static T registered(Thread t, int h) {
        T[] tab = table;
        int m = tab.length - 1;
        for (int i = h & m; ; i = (i + 1) & m) {
            T s = tab[i];
            if (s == null || s.thread == t) {
                return s;
            }
        }
    }

    /**
     * Removes {@code s} from the thread table (under the class lock; backward-shift deletion,
     * so that no probe sequence is cut). A thread probing meanwhile may miss its own entry once
     * and then finds it under the lock in register().
     */
    static void unpublish(T s) {
        T[] tab = table;
        int m = tab.length - 1;
        int i = s.hash & m;
        while (tab[i] != null && tab[i] != s) {
            i = (i + 1) & m;
        }
        if (tab[i] == null) {
            return;
        }
        int j = i;
        for (;;) {
            j = (j + 1) & m;
            T o = tab[j];
            if (o == null) {
                break;
            }
            int k = o.hash & m;
            // o stays if its home k lies cyclically in (i, j]
            if (i <= j ? (i < k && k <= j) : (i < k || k <= j)) {
                continue;
            }
            tab[i] = o;
            i = j;
        }
        tab[i] = null;
        tableUsed--;
        if (last == s) {
            last = null;
        }
    }
    // @thread-lookup fallback end

    /* @thread-lookup field begin
    // The current thread's state if at hand (the fast path), else null: a field the agent
    // adds to java.lang.Thread (no shared "last thread" to compare and write).
    static T cur() {
        return Thread.currentThread().bci$t;
    }

    // The current thread's state, registered on first use; null while registering and once
    // the thread ended (GONE: what a virtual thread runs after its end event is not recorded).
    static T self() {
        Thread t = Thread.currentThread();
        T s = t.bci$t;
        if (s == null) {
            return register(t, System.identityHashCode(t));
        }
        return s == GONE ? null : s;
    }

    static void publish(T s) {
        s.thread.bci$t = s;
    }

    // The thread keeps GONE (not null): code it still runs is not registered again.
    static void unpublish(T s) {
        s.thread.bci$t = GONE;
    }

    static T registered(Thread t, int h) {
        return t.bci$t;
    }
    @thread-lookup field end */

    static T register(Thread t, int h) {
        if (t == null || registering == t) {
            return null;
        }
        synchronized (Probes.class) {
            T s = registered(t, h);
            if (s != null) {
                return s;
            }
            if (failure != null) {
                return null; // recording stopped for good
            }
            registering = t;
            try {
                String name = null;
                try {
                    name = t.getName();
                } catch (Throwable e) {
                    name = null;
                }
                int slot;
                if (nfree > 0) {
                    slot = free[--nfree];
                } else {
                    if (nall == all.length) {
                        all = copy(all, all.length * 2);
                    }
                    slot = nall++;
                }
                if (budget > 0) {
                    long avg = endedCount > 0 ? endedBytes / endedCount : 4096;
                    long est = nLive * avg + ended.bytes() + rowsBytes;
                    if (est > budget) {
                        fail(null, text("the profile data (about ", est >> 20, " MB for ",
                                nLive, " live threads) would exceed a quarter of the heap:"
                                + " recording stopped, counts are incomplete"));
                        return null;
                    }
                }
                s = new T(t, nextSerial++, name, depth, false);
                s.early = startedEarly(t);
                nLive++;
                s.slot = slot;
                s.row = perThread && rowsUsed < ROWS ? rowsUsed++ : -1;
                all[slot] = s;
                version++;
                publish(s);
                return s;
            } catch (OutOfMemoryError e) {
                fail(e, "out of memory registering a thread: recording stopped, counts are incomplete");
                return null;
            } catch (Throwable e) {
                return null;
            } finally {
                registering = null;
            }
        }
    }

    static T[] copy(T[] a, int n) {
        T[] b = new T[n];
        System.arraycopy(a, 0, b, 0, a.length < n ? a.length : n);
        return b;
    }

    /**
     * Thread {@code t} ended (the agent calls this from JVMTI ThreadEnd / VirtualThreadEnd, on
     * that thread): its data is folded into the shared aggregate (or its row, thread=y), its
     * slot freed and its state dropped, so memory follows the number of live threads and of
     * distinct call paths, not of threads ever run. Counts still held in its cache entries go
     * with it (export). Under the class lock, like the sampler and the dump, so neither sees a
     * thread half folded. Never throws.
     */
    public static void ended(Thread t) {
        if (t == null) {
            return;
        }
        synchronized (Probes.class) {
            T s;
            try {
                s = registered(t, System.identityHashCode(t));
            } catch (Throwable e) {
                return;
            }
            if (s == null || s == GONE || s.slot < 0 || all[s.slot] != s) {
                return;
            }
            all[s.slot] = null;
            if (nfree == free.length) {
                int[] f = new int[free.length * 2];
                System.arraycopy(free, 0, f, 0, nfree);
                free = f;
            }
            free[nfree++] = s.slot;
            version++;
            nLive--;
            endedBytes += s.bytes();
            endedCount++;
            unpublish(s);
            if (failure != null) {
                return; // recording stopped: its data is dropped, to give memory back
            }
            try {
                long[] e = s.export();
                if (s.row >= 0) {
                    if (s.row >= rows.length) {
                        A[] r = new A[rows.length < 16 ? 16 : rows.length * 2];
                        System.arraycopy(rows, 0, r, 0, rows.length);
                        rows = r;
                    }
                    A a = new A(s.name);
                    a.add(e);
                    rows[s.row] = a;
                    rowsBytes += a.bytes();
                } else {
                    ended.add(e);
                }
            } catch (OutOfMemoryError e) {
                fail(e, "out of memory folding an ended thread's data: recording stopped, counts are incomplete");
            }
        }
    }

    /**
     * Starts recording (called by the agent at VMInit, after it set the clock fields), after a
     * self-test: every recording path runs once on a throwaway state, so that a runtime that
     * cannot link (a missing field or native) throws here, to the agent, with recording still
     * off, and not later in every probe (where the error's own instrumented constructor would
     * call probes again, without end).
     */
    /** The threads alive when recording started (see {@link T#early}). */
    static Thread[] earlyThreads = new Thread[0];

    static boolean startedEarly(Thread t) {
        for (Thread e : earlyThreads) {
            if (e == t) {
                return true;
            }
        }
        return false;
    }

    public static void start() {
        ThreadGroup g = Thread.currentThread().getThreadGroup();
        while (g != null && g.getParent() != null) {
            g = g.getParent();
        }
        if (g != null) {
            Thread[] ts = new Thread[g.activeCount() + 16];
            int n = g.enumerate(ts, true);
            // not this thread: the agent calls start() from VMInit, below any Java frame
            Thread self = Thread.currentThread();
            Thread[] e = new Thread[n];
            int k = 0;
            for (int i = 0; i < n; i++) {
                if (ts[i] != self) {
                    e[k++] = ts[i];
                }
            }
            Thread[] early = new Thread[k];
            System.arraycopy(e, 0, early, 0, k);
            earlyThreads = early;
        }
        cur();
        T t = new T(Thread.currentThread(), -1, "self-test", depth, false);
        t.enter(0);
        t.leafEnter(1);
        t.exit(0);
        t.timer(0, 1);
        t.sample(1, 1);
        A a = new A("self-test");
        a.add(t.export());
        a.add(a.export());
        if (timed) {
            clockNow();
        }
        synchronized (Probes.class) {
            sTotal = new long[0]; // the self-test's sample
            sMark = new int[0];
        }
        budget = testBudget > 0 ? testBudget : Runtime.getRuntime().maxMemory() / 4;
        fast = !timed;
        on = true;
    }

    /** Stops recording (called by the agent before it reads the data at VM death). */
    public static void stop() {
        fast = false;
        on = false;
    }

    // The dump: snapshot() takes every thread's data under the class lock (no thread is folded
    // or added meanwhile: nothing counted twice or missed), then the agent reads it by index.
    static String[] snapNames = new String[0];
    static long[][] snapData = new long[0][];

    /**
     * Takes the data to report: thread=n, the ended threads' aggregate then each live thread;
     * thread=y, one entry per row (an ended thread's row or a live thread's) in registration
     * order, then "other threads" (ended and live threads beyond {@link #ROWS}) if any. Returns
     * the number of entries. Live threads are read racily while they run (each value whole).
     */
    public static int snapshot() {
        synchronized (Probes.class) {
            snapNames = new String[0];
            snapData = new long[0][];
            int n = 0;
            String[] names = new String[1 + nall + rowsUsed];
            long[][] data = new long[names.length][];
            if (!perThread) {
                names[n] = "ended threads";
                data[n++] = ended.export();
                for (int i = 0; i < nall; i++) {
                    T s = all[i];
                    if (s != null) {
                        names[n] = s.name;
                        data[n++] = s.export();
                    }
                }
            } else {
                A other = new A("other threads");
                other.add(ended.export());
                other.threads = ended.threads;
                T[] live = new T[rowsUsed];
                for (int i = 0; i < nall; i++) {
                    T s = all[i];
                    if (s == null) {
                        continue;
                    }
                    if (s.row >= 0 && s.row < live.length) {
                        live[s.row] = s;
                    } else {
                        other.add(s.export());
                    }
                }
                for (int r = 0; r < rowsUsed; r++) {
                    if (live[r] != null) {
                        names[n] = live[r].name;
                        data[n++] = live[r].export();
                    } else if (r < rows.length && rows[r] != null) {
                        names[n] = rows[r].name;
                        data[n++] = rows[r].export();
                    }
                }
                if (other.threads > 0) {
                    names[n] = "other threads";
                    data[n++] = other.export();
                }
            }
            snapNames = names;
            snapData = data;
            return n;
        }
    }

    public static String threadName(int i) {
        String[] a = snapNames;
        return i >= 0 && i < a.length ? a[i] : null;
    }

    /**
     * Entry {@code i} of the last {@link #snapshot}, flattened: {@code [nodes, (prefix, method,
     * count, self)*, methods, (total)*, mismatches, misses, slow entries, timers, (count,
     * total)*]}. Node 0 is the root; node {@code k >= 1} is the call path of its prefix node
     * followed by its method.
     */
    public static long[] export(int i) {
        long[][] a = snapData;
        return i >= 0 && i < a.length ? a[i] : null;
    }

    /** clock=sample: sampled total time per method over all threads (index = method id). */
    public static long[] sampledTotals() {
        synchronized (Probes.class) {
            long[] t = sTotal;
            long[] out = new long[t.length];
            System.arraycopy(t, 0, out, 0, t.length);
            return out;
        }
    }

    /** a + x + b + y + c, without the JDK's string concatenation (invokedynamic). */
    static String text(String a, long x, String b, long y, String c) {
        char[] out = new char[a.length() + b.length() + c.length() + 40];
        int o = put(out, 0, a);
        o = put(out, o, x);
        o = put(out, o, b);
        o = put(out, o, y);
        o = put(out, o, c);
        return new String(out, 0, o);
    }

    private static int put(char[] out, int o, String s) {
        s.getChars(0, s.length(), out, o);
        return o + s.length();
    }

    private static int put(char[] out, int o, long v) {
        if (v < 0) {
            out[o++] = '-';
            v = -v;
        }
        char[] d = new char[20];
        int n = 0;
        do {
            d[n++] = (char) ('0' + (v % 10));
            v /= 10;
        } while (v > 0 && n < 20);
        while (n > 0) {
            out[o++] = d[--n];
        }
        return o;
    }

    /** Why recording stopped early, or null. */
    public static String failure() {
        return failure;
    }

    /**
     * Call paths of many threads folded together (ended threads; see {@link #ended}): nodes
     * keyed by (prefix node, method), counts and self time summed, per-method totals summed.
     * Changed only under the class lock.
     */
    static final class A {
        final String name;
        /** Threads folded in. */
        long threads;
        int n = 1;
        int[] prefix = new int[16];
        int[] ids = new int[16];
        long[] cnt = new long[16];
        long[] slf = new long[16];
        long[] hKey = new long[32];
        int[] hVal = new int[32];
        int hUsed;
        long[] total = new long[0];
        long mismatches;
        long misses;
        long slowEnters;
        long[] tmCount = new long[0];
        long[] tmTotal = new long[0];

        A(String name) {
            this.name = name;
            for (int k = 0; k < hKey.length; k++) {
                hKey[k] = -1L;
            }
        }

        private int child(int p, int id) {
            long key = ((long) p << 32) | (id & 0xffffffffL);
            int m = hKey.length - 1;
            int i = T.mix(key) & m;
            for (;;) {
                long k = hKey[i];
                if (k == key) {
                    return hVal[i];
                }
                if (k == -1L) {
                    break;
                }
                i = (i + 1) & m;
            }
            if (n == prefix.length) {
                int c = prefix.length * 2;
                prefix = T.copy(prefix, c);
                ids = T.copy(ids, c);
                cnt = T.copy(cnt, c);
                slf = T.copy(slf, c);
            }
            int node = n++;
            prefix[node] = p;
            ids[node] = id;
            if ((hUsed + 1) * 2 > hKey.length) {
                long[] ok = hKey;
                int[] ov = hVal;
                hKey = new long[ok.length * 2];
                hVal = new int[ok.length * 2];
                for (int k = 0; k < hKey.length; k++) {
                    hKey[k] = -1L;
                }
                m = hKey.length - 1;
                for (int k = 0; k < ok.length; k++) {
                    if (ok[k] != -1L) {
                        int j = T.mix(ok[k]) & m;
                        while (hKey[j] != -1L) {
                            j = (j + 1) & m;
                        }
                        hKey[j] = ok[k];
                        hVal[j] = ov[k];
                    }
                }
                i = T.mix(key) & m;
                while (hKey[i] != -1L) {
                    i = (i + 1) & m;
                }
            }
            hKey[i] = key;
            hVal[i] = node;
            hUsed++;
            return node;
        }

        /** About the bytes it takes. */
        long bytes() {
            return 64 + 24L * prefix.length + 12L * hKey.length + 8L * total.length
                    + 16L * tmCount.length;
        }

        /** Adds one export (a thread's or an aggregate's, same layout). */
        void add(long[] e) {
            int o = 0;
            int ne = (int) e[o++];
            int[] map = new int[ne < 1 ? 1 : ne];
            o += 4; // node 0: the root
            for (int k = 1; k < ne; k++) {
                int p = (int) e[o];
                int id = (int) e[o + 1];
                long c = e[o + 2];
                long sl = e[o + 3];
                o += 4;
                if (p < 0 || p >= k) {
                    continue; // not a node of a well-formed export (prefixes come first)
                }
                int node = child(map[p], id);
                map[k] = node;
                cnt[node] += c;
                slf[node] += sl;
            }
            int nm = (int) e[o++];
            if (nm > total.length) {
                total = T.copy(total, nm);
            }
            for (int k = 0; k < nm; k++) {
                total[k] += e[o++];
            }
            mismatches += e[o++];
            misses += e[o++];
            slowEnters += e[o++];
            int nt = (int) e[o++];
            if (nt > tmCount.length) {
                tmCount = T.copy(tmCount, nt);
                tmTotal = T.copy(tmTotal, nt);
            }
            for (int k = 0; k < nt; k++) {
                tmCount[k] += e[o++];
                tmTotal[k] += e[o++];
            }
            threads++;
        }

        long[] export() {
            int nt = tmCount.length;
            long[] out = new long[1 + 4 * n + 1 + total.length + 3 + 1 + 2 * nt];
            int o = 0;
            out[o++] = n;
            for (int k = 0; k < n; k++) {
                out[o++] = prefix[k];
                out[o++] = ids[k];
                out[o++] = cnt[k];
                out[o++] = slf[k];
            }
            out[o++] = total.length;
            for (int k = 0; k < total.length; k++) {
                out[o++] = total[k];
            }
            out[o++] = mismatches;
            out[o++] = misses;
            out[o++] = slowEnters;
            out[o++] = nt;
            for (int k = 0; k < nt; k++) {
                out[o++] = tmCount[k];
                out[o++] = tmTotal[k];
            }
            return out;
        }
    }

    /** A thread's state. Only its own thread writes it. */
    static final class T {
        final Thread thread;
        final int hash;
        final long serial;
        final String name;
        final int depth;
        /** Index in Probes.all while the thread is live. */
        int slot = -1;
        /** thread=y: its row in the report, -1 = "other threads". */
        int row = -1;

        // shadow stack pointer (index into fr); fr[0..8) is the root frame. fr[sp - 7] is the
        // context node (call path of the top depth-1 frames) of the top frame's callees (not
        // kept in a field of its own as well: one store less in every enter and exit)
        int sp = 8;
        // the pure leaf running now (its node), 0 = none; read by the sampler
        int leaf;

        // call-path nodes; node 0 is the root (empty path)
        int nNodes = 1;
        // (every per-thread array starts small: a thread that makes few calls stays small)
        int[] nPrefix = new int[16];
        int[] nId = new int[16];
        int[] nLen = new int[16];

        // (ctx, id) -> node
        long[] hKey = new long[32];
        int[] hVal = new int[32];
        int hUsed;


        /** Exits that matched no frame (and frames that lost their exit). */
        long mismatches;
        /**
         * The thread ran before recording started (e.g. Reference Handler, Common-Cleaner):
         * its methods entered then (blocked in a wait) exit later with no frame on the shadow
         * stack. Such exits are expected, not counted as mismatches.
         */
        boolean early;
        /** Entries that missed the callee cache of their context (statistics). */
        long misses;
        /** Entries that took the out-of-line path (statistics). */
        long slowEnters;
        // the rules' timer probe, per method: count, total ns
        long[] tmCount = new long[0];
        long[] tmTotal = new long[0];

        void timer(int id, long ns) {
            if (id >= tmCount.length) {
                int n = tmCount.length < 64 ? 64 : tmCount.length;
                while (n <= id) {
                    n *= 2;
                }
                tmCount = copy(tmCount, n);
                tmTotal = copy(tmTotal, n);
            }
            tmCount[id]++;
            tmTotal[id] += ns < 0 ? 0 : ns;
        }

        /**
         * {@code gone}: the state of every ended thread (Probes.GONE): an empty stack of
         * capacity 0 and a 1-entry cache that never hits, so that every fast path goes to the
         * slow path, which records nothing for it.
         */
        T(Thread thread, long serial, String name, int depth, boolean gone) {
            this.thread = thread;
            this.hash = System.identityHashCode(thread);
            this.serial = serial;
            this.name = name;
            this.depth = depth < 1 ? 1 : depth;
            if (gone) {
                fr = new long[8];
                dm = new long[4];
            }
            if (timed) {
                nSelf = new long[16];
            }
            for (int k = 0; k < hKey.length; k++) {
                hKey[k] = -1L;
            }
            for (int k = 0; k < dm.length; k += 4) {
                dm[k] = -1L;
            }
            fr[0] = -1L << 32; // root: no method, node 0
        }

        // Shadow stack, 8 longs per frame: [id << 32 | node, ctx for callees, -, start time,
        // time in callees, -, -, -]. fr[0..8) is the root frame.
        long[] fr = new long[8 * 16];
        // Direct-mapped cache, 4 longs per entry: [key = ctx << 32 | id, the node's context
        // for callees << 32 | node, calls counted here and not yet in nCount, -], read by the
        // inlined fast paths of enter and leafEnter: a hit touches one cache line (no random
        // access into nCount, which has one slot per call path). An entry's count moves to
        // nCount when the entry is replaced. Starts small (threads that make few calls stay
        // small) and doubles, up to DM_MAX entries, while entries keep missing it. Only the
        // owner thread writes it; export reads it.
        long[] dm = new long[4 * 16];
        /** Most entries the direct-mapped cache grows to. */
        static final int DM_MAX = 1 << 16;
        // per node
        long[] nCount = new long[16];
        /** Timed clocks only (else empty). */
        long[] nSelf = new long[0];
        int[] nCtx = new int[16];
        // timed clocks, per method the thread ran (open addressing on the method id; slot i:
        // mdKey[i] = id + 1, 0 = empty): md[2i] = its frames on the stack, md[2i + 1] = total
        // time of its outermost frames. Sized by the methods used, not by the largest id.
        int[] mdKey = new int[0]; // (allocated on first use: timed clocks only)
        long[] md = new long[0];
        int mdUsed;
        // sampler-owned: sampled time per node (the per-method totals are Probes.sTotal)
        long[] sSelf = new long[0];
        /** slowEnters when the direct-mapped cache last grew. */
        long dmGrown;

        void enter(int id) {
            slowEnters++;
            int b = sp;
            long[] fr = this.fr;
            if (b + 8 > fr.length) {
                fr = growStack();
            }
            int node = cached((int) fr[b - 7], id);
            fr[b] = ((long) id << 32) | node;
            fr[b + 1] = nCtx[node];
            if (timed) {
                int j = mdSlot(id); // (md may grow in mdSlot: read it after)
                md[j]++;
                fr[b + 4] = 0;
                fr[b + 3] = clockNow();
            }
            sp = b + 8;
        }

        /** About the bytes it takes (arrays read racily; an estimate). */
        long bytes() {
            return 200 + 8L * (fr.length + dm.length + nCount.length + nSelf.length + hKey.length
                    + md.length + sSelf.length) + 4L * (nPrefix.length + nId.length + nLen.length
                    + nCtx.length + hVal.length + mdKey.length);
        }

        /** A pure leaf's entry, off the fast path (see {@link Probes#leafEnter}). */
        void leafEnter(int id) {
            slowEnters++;
            leaf = cached((int) fr[sp - 7], id);
        }

        /**
         * Counts a call of method {@code id} in context {@code ctx} and returns its node: the
         * entry of the direct-mapped cache of the fast paths, (re)filled from {@link #lookup}.
         */
        private int cached(int ctx, int id) {
            // grows while entries keep missing: after 16 slow entries per entry it has
            if (slowEnters - dmGrown > 4L * dm.length && dm.length < 4 * DM_MAX) {
                dmGrown = slowEnters;
                growDm();
            }
            long[] dm = this.dm;
            int h = slot(dm, ctx, id);
            long key = ((long) ctx << 32) | id;
            if (dm[h] != key) {
                int node = lookup(ctx, id);
                flush(dm, h);
                dm[h] = key;
                dm[h + 1] = ((long) nCtx[node] << 32) | node;
            }
            dm[h + 2]++;
            return (int) dm[h + 1];
        }

        /** Moves the count of cache entry {@code h} to its node. */
        private void flush(long[] dm, int h) {
            long c = dm[h + 2];
            if (dm[h] != -1L && c != 0) {
                nCount[(int) dm[h + 1]] += c;
            }
            dm[h + 2] = 0;
        }

        /** The node of context {@code ctx} followed by method {@code id}. */
        private int lookup(int ctx, int id) {
            // (a per-context cache of recent callees in front of the hash table cost 64 bytes
            // a node in every thread; it went when thread memory had to stay small)
            misses++;
            return child(ctx, id);
        }

        void exit(int id) {
            int b = sp;
            if (b <= 8) {
                if (!early) {
                    mismatches++;
                }
                return;
            }
            long[] fr = this.fr;
            long f = fr[b - 8];
            if (!timed && (int) (f >>> 32) == id) {
                sp = b - 8;
                return;
            }
            long t = timed ? clockNow() : 0;
            if ((int) (f >>> 32) != id) {
                int k = b - 16;
                while (k >= 8 && (int) (fr[k] >>> 32) != id) {
                    k -= 8;
                }
                if (k < 8) {
                    if (!early) {
                        mismatches++;
                    }
                    return;
                }
                // frames above k lost their exit (e.g. an error inside a probe): end them now
                while (b - 8 > k) {
                    mismatches++;
                    b = pop(b, t);
                }
            }
            sp = pop(b, t);
        }

        private int pop(int b, long t) {
            b -= 8;
            long[] fr = this.fr;
            long f = fr[b];
            int node = (int) f;
            if (!timed) {
                return b;
            }
            long el = t - fr[b + 3];
            if (el < 0) {
                el = 0;
            }
            long self = el - fr[b + 4];
            if (self < 0) {
                self = 0;
            }
            nSelf[node] += self;
            if (b > 0) {
                fr[b - 4] += el;
            }
            int j = mdSlot((int) (f >>> 32));
            long[] md = this.md;
            if (--md[j] == 0) {
                md[j + 1] += el;
            }
            return b;
        }

        private int child(int ctx, int id) {
            long key = ((long) ctx << 32) | (id & 0xffffffffL);
            int m = hKey.length - 1;
            int i = mix(key) & m;
            for (;;) {
                long k = hKey[i];
                if (k == key) {
                    return hVal[i];
                }
                if (k == -1L) {
                    break;
                }
                i = (i + 1) & m;
            }
            int node = nNodes;
            if (node == nPrefix.length) {
                growNodes();
            }
            nNodes = node + 1;
            nPrefix[node] = ctx;
            nId[node] = id;
            nLen[node] = nLen[ctx] + 1;
            // insert before computing the ctx: drop() may add nodes and rehash
            put(key, node);
            int c = nLen[node] < depth ? node : drop(node);
            nCtx[node] = c;
            return node;
        }

        /** The node of this node's path without its oldest frame. */
        private int drop(int node) {
            if (nLen[node] <= 1) {
                return 0;
            }
            return child(drop(nPrefix[node]), nId[node]);
        }

        static int mix(long key) {
            long h = key * 0x9E3779B97F4A7C15L;
            return (int) (h ^ (h >>> 29));
        }

        private void put(long key, int val) {
            // (load up to 3/4: a thread's table is a large part of its memory)
            if ((hUsed + 1) * 4 > hKey.length * 3) {
                long[] ok = hKey;
                int[] ov = hVal;
                hKey = new long[ok.length * 2];
                hVal = new int[ok.length * 2];
                for (int k = 0; k < hKey.length; k++) {
                    hKey[k] = -1L;
                }
                int m = hKey.length - 1;
                for (int k = 0; k < ok.length; k++) {
                    if (ok[k] != -1L) {
                        int j = mix(ok[k]) & m;
                        while (hKey[j] != -1L) {
                            j = (j + 1) & m;
                        }
                        hKey[j] = ok[k];
                        hVal[j] = ov[k];
                    }
                }
            }
            int m = hKey.length - 1;
            int i = mix(key) & m;
            while (hKey[i] != -1L) {
                i = (i + 1) & m;
            }
            hKey[i] = key;
            hVal[i] = val;
            hUsed++;
        }

        private long[] growStack() {
            fr = copy(fr, fr.length * 2);
            return fr;
        }

        private void growDm() {
            long[] old = dm;
            for (int i = 0; i < old.length; i += 4) {
                flush(old, i);
            }
            long[] k = new long[old.length * 2];
            for (int i = 0; i < k.length; i += 4) {
                k[i] = -1L;
            }
            dm = k;
        }

        private void growNodes() {
            int n = nPrefix.length * 2;
            nId = copy(nId, n);
            nLen = copy(nLen, n);
            nCtx = copy(nCtx, n);
            nCount = copy(nCount, n);
            if (timed) {
                nSelf = copy(nSelf, n);
            }
            nPrefix = copy(nPrefix, n);
        }

        /** Index in md of method {@code id}'s pair, added if new. */
        private int mdSlot(int id) {
            for (;;) {
                int[] k = mdKey;
                int m = k.length - 1;
                int i = (id * 0x9E3779B1) & m;
                for (;;) {
                    if (m < 0) {
                        break; // not allocated yet
                    }
                    int v = k[i];
                    if (v == id + 1) {
                        return 2 * i;
                    }
                    if (v == 0) {
                        break;
                    }
                    i = (i + 1) & m;
                }
                if (k.length > 0 && (mdUsed + 1) * 2 <= k.length) {
                    k[i] = id + 1;
                    mdUsed++;
                    return 2 * i;
                }
                int[] ok = mdKey;
                long[] om = md;
                int[] nk = new int[ok.length < 16 ? 16 : ok.length * 2];
                long[] nm = new long[2 * nk.length];
                int mm = nk.length - 1;
                for (int q = 0; q < ok.length; q++) {
                    if (ok[q] != 0) {
                        int j = ((ok[q] - 1) * 0x9E3779B1) & mm;
                        while (nk[j] != 0) {
                            j = (j + 1) & mm;
                        }
                        nk[j] = ok[q];
                        nm[2 * j] = om[2 * q];
                        nm[2 * j + 1] = om[2 * q + 1];
                    }
                }
                md = nm;
                mdKey = nk;
            }
        }

        void sample(long ns, int ep) {
            // read racily while the owner runs: each value once, then checked
            int lf = leaf;
            int b = sp;
            long[] fr = this.fr;
            if (b > fr.length) {
                b = fr.length;
            }
            b &= ~7;
            int node;
            int topId;
            int k = b - 8; // the first shadow frame charged with total time
            if (lf > 0) {
                // a pure leaf is running on top of the shadow stack
                int[] ids = nId;
                if (lf >= ids.length) {
                    return;
                }
                node = lf;
                topId = ids[lf];
            } else {
                if (b <= 8) {
                    return;
                }
                // the top frame is read once: its node (self) and method (total) must agree
                // even if the owner pushes and pops while we look
                long top = fr[b - 8];
                node = (int) top;
                topId = (int) (top >>> 32);
                k = b - 16;
            }
            if (node <= 0 || topId < 0) {
                return;
            }
            if (node >= sSelf.length) {
                int n = sSelf.length < 16 ? 16 : sSelf.length;
                while (n <= node) {
                    n *= 2;
                }
                sSelf = copy(sSelf, n);
            }
            sSelf[node] += ns;
            charge(topId, ns, ep);
            for (; k >= 8; k -= 8) {
                int id = (int) (fr[k] >>> 32);
                if (id >= 0) {
                    charge(id, ns, ep);
                }
            }
        }


        private static int min(int a, int b) {
            return a < b ? a : b;
        }

        static int[] copy(int[] a, int n) {
            int[] b = new int[n];
            System.arraycopy(a, 0, b, 0, a.length);
            return b;
        }

        static long[] copy(long[] a, int n) {
            long[] b = new long[n];
            System.arraycopy(a, 0, b, 0, a.length);
            return b;
        }

        long[] export() {
            // read each array once; a concurrent grow leaves the old (shorter) copies consistent
            int[] prefix = nPrefix;
            int[] ids = nId;
            long[] cnt = nCount;
            long[] cache = dm;
            long[] slf = nSelf;
            long[] md = this.md;
            // a copy: a running thread adds keys while this reads them (two reads of one slot
            // could disagree and index past the output)
            int[] mk = mdKey.clone();
            long[] ss = sSelf;
            boolean tm = timed;
            int n = nNodes;
            n = min(min(n, prefix.length), min(ids.length, cnt.length));
            if (tm) {
                n = min(n, slf.length);
            }
            // timed: total per method id, dense (sampled totals are kept for all threads at
            // once, Probes.sTotal); md and mdKey grow together, a torn pair is skipped
            int nm = 0;
            boolean pair = tm && md.length == 2 * mk.length;
            if (pair) {
                for (int k = 0; k < mk.length; k++) {
                    if (mk[k] > nm) {
                        nm = mk[k];
                    }
                }
            }
            long[] tc = tmCount;
            long[] tt = tmTotal;
            int nt = min(tc.length, tt.length);
            long[] out = new long[1 + 4 * n + 1 + nm + 3 + 1 + 2 * nt];
            int o = 0;
            out[o++] = n;
            for (int k = 0; k < n; k++) {
                out[o++] = prefix[k];
                out[o++] = ids[k];
                out[o++] = cnt[k];
                out[o++] = tm ? slf[k] : (k < ss.length ? ss[k] : 0);
            }
            // calls still counted in the cache: an entry moves its count to nCount when it is
            // replaced, so a thread still running can be off by the entries it moves meanwhile
            for (int h = 0; h + 3 < cache.length; h += 4) {
                int node = (int) cache[h + 1];
                long c = cache[h + 2];
                if (cache[h] != -1L && c != 0 && node > 0 && node < n) {
                    out[1 + 4 * node + 2] += c;
                }
            }
            out[o++] = nm;
            if (pair) {
                for (int k = 0; k < mk.length; k++) {
                    if (mk[k] > 0 && mk[k] <= nm) {
                        out[o + mk[k] - 1] = md[2 * k + 1];
                    }
                }
            }
            o += nm;
            out[o++] = mismatches;
            out[o++] = misses;
            out[o++] = slowEnters;
            out[o++] = nt;
            for (int k = 0; k < nt; k++) {
                out[o++] = tc[k];
                out[o++] = tt[k];
            }
            return out;
        }
    }
}

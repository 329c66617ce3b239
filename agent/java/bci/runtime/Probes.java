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
 * <p>Counting is per thread, without locks or atomics: a thread finds its own {@link T} in a
 * field of its Thread object (no shared "last thread" that threads would keep writing) and
 * counts in its cache entries. The call-path nodes are shared by all threads (see
 * {@link #gKey}), looked up without a lock. The class lock is taken by a thread's first probe
 * (to register), for a call path no thread ran before, and when a thread's queue of counts is
 * full (moved to its sink, {@link A}); through JNI ({@link #jniLock}) under the agent. Counts
 * are exact; times come from the clock chosen with {@code clock=}.
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
     * The live platform threads' states, by slot: the sampler's table ({@link #version}
     * changes with every change).
     */
    static final Slots live = new Slots();
    /**
     * The live virtual threads' states (JDK 21+), apart from the platform threads': they have
     * no CPU time of their own to sample, and thousands of them may be parked at once, which
     * the sampler then read every interval (and made a slot table of, under the class lock).
     */
    static final Slots vlive = new Slots();
    /** Changes whenever a slot of {@link #live} gets or loses a thread (the sampler then re-reads them). */
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
    /** thread=y: the sink of each row's thread (its counts, live or ended), by row. */
    static A[] rows = new A[0];
    /**
     * The counts of all threads (thread=n) or of those without a row (thread=y): ended
     * threads folded in, live threads' counts as they leave their caches. Bounded by the
     * number of distinct call paths, not by the number of threads.
     */
    static A ended = new A("other threads", true);
    /** thread=y: bytes of the rows of ended threads. */
    static long rowsBytes;
    /** The state a thread's field points to once the thread ended (field build; see ended()). */
    static final T GONE = new T(null, -2, "ended", true);
    /**
     * The state a thread's field points to while the tracing runtime pauses its recording
     * (field build; see {@link #pause}): like GONE, every fast path misses on it and the slow
     * paths record nothing. {@code early}: the exits that miss on it count no mismatch (no
     * write to this object, which every paused thread shares).
     */
    static final T PAUSED = new T(null, -3, "paused", true);
    /** What {@link #pause} returns for a thread that had no state yet (field build). */
    static final Object UNSET = new Object();

    static {
        PAUSED.early = true;
    }
    /**
     * States of ended threads, their data folded, ready for the next threads (a program that
     * starts threads one after the other allocates no new state for each).
     */
    static T[] pool = new T[64];
    static int npool;

    // The call-path tree, shared by all threads: node k >= 1 is the call path of node
    // prefix(k) (a context: a path of at most depth-1 frames) followed by method id(k); node
    // 0 is the root (the empty path). Nodes are only added, under the class lock, and a
    // node's values never change once written: a thread looks a node up without the lock
    // (find) and takes the lock only for a path that no thread ran before (node). Memory so
    // follows the distinct call paths, not the threads. Stored in chunks of 1 << GS nodes
    // (12 bytes a node, no copy and no doubling slack as the tree grows; no chunk large enough
    // to be a humongous object for G1), the path's length not stored (walked when a node is
    // added).
    /** log2 of the nodes in a chunk of {@link #gKey} and {@link #gCtx}. */
    static final int GS = 13;
    static final int GM = (1 << GS) - 1;
    /**
     * By chunk (node >>> GS), then node & GM: ~(prefix << 32 | id); 0: not written yet (as a
     * racy reader may see it, or a chunk it does not see yet).
     */
    static long[][] gKey = {new long[1 << GS]};
    /** The node's context for its callees + 1; 0: not written yet. Written last. */
    static int[][] gCtx = {new int[1 << GS]};
    /** Open addressing on T.mix(key): node numbers, 0 = empty. Load at most 3/4. */
    static int[] gTab = new int[128];
    /** Nodes in the tree, the root included. */
    static int gNodes = 1;

    static {
        gCtx[0][0] = 1; // the root's callees: context 0 (the root)
    }

    /** ~(prefix << 32 | id) of node {@code n}, 0 if not (visibly) written. */
    static long gkey(int n) {
        long[][] k = gKey;
        int c = n >>> GS;
        if (n < 0 || c >= k.length) {
            return 0;
        }
        long[] a = k[c];
        return a == null ? 0 : a[n & GM];
    }

    /** Node {@code n}'s context for its callees + 1, 0 if not (visibly) written. */
    static int gctx(int n) {
        int[][] k = gCtx;
        int c = n >>> GS;
        if (n < 0 || c >= k.length) {
            return 0;
        }
        int[] a = k[c];
        return a == null ? 0 : a[n & GM];
    }

    /**
     * The node of method {@code id} called in context {@code ctx}, as {@code ctx for its
     * callees << 32 | node}, or -1 if not found. Without the lock: what a racy read may see
     * of a node being added (zeros) is treated as "not found", and the caller then looks
     * again under the lock.
     */
    static long find(int ctx, int id) {
        long key = ((long) ctx << 32) | (id & 0xffffffffL);
        int[] tab = gTab;
        int m = tab.length - 1;
        int i = T.mix(key) & m;
        for (int k = 0; k <= m; k++) {
            int n = tab[i];
            if (n <= 0) {
                return -1;
            }
            if (gkey(n) == ~key) {
                int c = gctx(n);
                return c > 0 ? ((long) (c - 1) << 32) | n : -1;
            }
            i = (i + 1) & m;
        }
        return -1;
    }

    /** Like {@link #find}, adding the node (under the class lock) if it is new. */
    static long node(int ctx, int id) {
        long v = find(ctx, id);
        if (v >= 0) {
            return v;
        }
        if (jniLock && lock0()) {
            try {
                int n = child(ctx, id);
                return ((long) (gctx(n) - 1) << 32) | n;
            } finally {
                unlock0();
            }
        }
        synchronized (Probes.class) {
            int n = child(ctx, id);
            return ((long) (gctx(n) - 1) << 32) | n;
        }
    }

    /**
     * Under the class lock: the node of (ctx, id), added if new; 0 (the root) once recording
     * stopped, or if adding it would take the tree past the memory budget (recording then
     * stops here: the call being entered is the first one not counted).
     */
    static int child(int ctx, int id) {
        if (failure != null) {
            return 0; // recording stopped: the tree no longer grows (its table may be gone)
        }
        long key = ((long) ctx << 32) | (id & 0xffffffffL);
        int[] tab = gTab;
        int m = tab.length - 1;
        int i = T.mix(key) & m;
        for (;;) {
            int n = tab[i];
            if (n == 0) {
                break;
            }
            if (gkey(n) == ~key) {
                return n;
            }
            i = (i + 1) & m;
        }
        int node = gNodes;
        int ch = node >>> GS;
        boolean newChunk = ch >= gKey.length || gKey[ch] == null;
        boolean newTable = (node + 1) * 4L > tab.length * 3L;
        // the budget, checked before the tree grows (a chunk, 12 bytes a node; the table,
        // doubled): not on every node, only when it takes more memory
        if ((newChunk || newTable)
                && overBudgetBy((newChunk ? 12L << GS : 0) + (newTable ? 8L * tab.length : 0),
                        "the call-path tree")) {
            return 0;
        }
        if (newChunk) {
            // a new chunk, in new outer arrays filled before they are published
            int len = gKey.length > ch ? gKey.length : ch * 2;
            long[][] nk = new long[len][];
            int[][] nc = new int[len][];
            System.arraycopy(gKey, 0, nk, 0, gKey.length);
            System.arraycopy(gCtx, 0, nc, 0, gCtx.length);
            nk[ch] = new long[1 << GS];
            nc[ch] = new int[1 << GS];
            gCtx = nc;
            gKey = nk;
        }
        gKey[ch][node & GM] = ~key;
        gNodes = node + 1;
        if (newTable) {
            // a new table, filled before it is published (racy readers see the old or the new)
            int[] nt = new int[tab.length * 2];
            int nm = nt.length - 1;
            for (int k = 1; k < node; k++) {
                int j = T.mix(~gkey(k)) & nm;
                while (nt[j] != 0) {
                    j = (j + 1) & nm;
                }
                nt[j] = k;
            }
            tab = nt;
            m = nm;
            gTab = nt;
            i = T.mix(key) & m;
            while (tab[i] != 0) {
                i = (i + 1) & m;
            }
        }
        tab[i] = node;
        int d = depth < 1 ? 1 : depth;
        int c = length(node, d) < d ? node : drop(node);
        gCtx[ch][node & GM] = c + 1;
        return node;
    }

    /** Frames in node {@code n}'s path, counted up to {@code max}. */
    static int length(int n, int max) {
        int l = 0;
        while (n > 0 && l < max) {
            l++;
            n = (int) (~gkey(n) >>> 32);
        }
        return l;
    }

    /** The node of this node's path without its oldest frame (under the class lock). */
    static int drop(int node) {
        long k = ~gkey(node);
        int p = (int) (k >>> 32);
        if (p <= 0) {
            return 0;
        }
        return child(drop(p), (int) k);
    }

    /** About the bytes the shared tree takes. */
    static long treeBytes() {
        long b = 16L * gKey.length + 4L * gTab.length;
        for (long[] c : gKey) {
            if (c != null) {
                b += 12L * c.length;
            }
        }
        return b;
    }

    /**
     * Most bytes the recorded data may take (a quarter of the largest heap; 0 = no limit):
     * the live threads' states beyond a per-thread allowance (see {@link #liveCharged}) plus
     * the aggregates and the tree. Checked when a thread registers and where the data grows:
     * the tree's chunks and table ({@link #child}), the sinks' maps ({@link NodeMap}, {@link
     * #overBudgetBy}) and the thread states' arrays ({@link T#grew}), the slow paths that
     * allocate, never the probes' fast paths. Above it recording stops: a heap that fills
     * with profile data makes the program crawl from one full GC to the next, or die.
     */
    static long budget;
    /** Tests only (BCIAGENT_TEST_BUDGET): the budget in bytes instead of a quarter of the heap. */
    static long testBudget;
    static int nLive;
    /** Most threads live at once (for the log). */
    static int maxLive;
    /**
     * The live threads' states: their bytes when last counted ({@link #countLive}, when
     * {@link #liveChanges} registrations and ends have passed since), for nLive == liveCounted
     * threads; threads registered since count as new states ({@link T#FRESH_BYTES}). Before,
     * live threads were counted at the average size of the threads that had ended: a few
     * large ended threads (a JDK worker with a grown cache) made thousands of small parked
     * virtual threads look like hundreds of MB, and recording stopped.
     */
    static long liveBytes;
    /**
     * The part of {@link #liveBytes} charged to the budget: each live thread's state beyond
     * {@link #ALLOWANCE}. A thread's own heap already grows with the number of threads (a
     * parked virtual thread takes ~2.1 KB bare on JDK 25, a platform thread more), so a state
     * within the allowance adds less than half of what the program's thread costs and is not
     * profile data: charging it stopped recording whenever ~100,000 virtual threads happened to
     * be parked at once (~0.6 KB each, 64 MB budget at -Xmx256m), counts lost at random. Deep
     * stacks and grown caches are charged.
     */
    static long liveCharged;
    /** Bytes of each live thread's state not charged to the budget (see {@link #liveCharged}). */
    static final long ALLOWANCE = 1024;
    static int liveCounted;
    static int liveChanges;
    /**
     * Changes whenever a thread's state grows (its shadow stack, cache, queue, timed clocks'
     * arrays; a pooled state reused at its grown size) and is then above the allowance: bumped
     * without a lock by the owner thread (a lost increment still changes it). The periodic recount of the live states
     * ({@link #countLive}) is skipped while it has not changed: states within the allowance
     * cost nothing, so only growth can raise {@link #liveCharged}; ended threads only lower it,
     * and a verdict above the budget counts again anyway. (The recount read every live state
     * every eighth of their changes: ~2 % of the CPU of 100,000 virtual threads, one perf run.)
     */
    static volatile int grown;
    /** {@link #grown} when the live states were last counted. */
    static int grownCounted;

    /** Growths of states above the allowance since the last {@link #checkLive} (racy). */
    static int growths;

    /** The budget after a thread state grew: the live states counted, under the class lock. */
    static void checkLive() {
        if (jniLock && lock0()) {
            try {
                countLive();
                overBudgetBy(0, "the threads' states");
            } finally {
                unlock0();
            }
            return;
        }
        synchronized (Probes.class) {
            countLive();
            overBudgetBy(0, "the threads' states");
        }
    }

    /** Under the class lock: counts the bytes of the live threads' states. */
    static void countLive() {
        grownCounted = grown;
        long b = 0;
        long charged = 0;
        for (Slots t = live; t != null; t = t == live ? vlive : null) {
            T[] a = t.a;
            for (int i = 0; i < t.n && i < a.length; i++) {
                T s = a[i];
                if (s != null) {
                    long sb = s.bytes();
                    b += sb;
                    // (not Math.max: a JDK method, instrumented, and this runs inside probes)
                    charged += sb > ALLOWANCE ? sb - ALLOWANCE : 0;
                }
            }
        }
        liveBytes = b;
        liveCharged = charged;
        liveCounted = nLive;
        liveChanges = 0;
    }

    /**
     * Under the class lock, at a registration: the recorded data's bytes if above the budget,
     * else -1. The live states are counted again every eighth of their number of changes
     * (amortized: a few states read per registration), and before a verdict above the budget
     * when a sixty-fourth have changed since.
     */
    static long overBudget() {
        long rest = ended.bytes() + rowsBytes + treeBytes();
        if (++liveChanges > (liveCounted >> 3) + 64 && grown != grownCounted) {
            countLive();
        }
        int added = nLive - liveCounted;
        long fresh = Math.max(0, T.FRESH_BYTES - ALLOWANCE);
        long est = liveCharged + (added > 0 ? added * fresh : 0) + rest;
        if (est > budget && liveChanges > (liveCounted >> 6)) {
            countLive();
            est = liveCharged + rest;
        }
        return est > budget ? est : -1;
    }

    /**
     * Under the class lock, before recorded data grows by about {@code more} bytes ({@code
     * what} grows): whether that takes it past the budget, and if so recording stops (see
     * {@link #fail}). The growth that asked may still be made (counts on their way to a sink
     * are kept: the data is then over the budget by that one step). The live states are
     * counted again before a verdict above the budget.
     */
    static boolean overBudgetBy(long more, String what) {
        if (budget <= 0 || failure != null || !on) {
            return false;
        }
        long rest = ended.bytes() + rowsBytes + treeBytes() + more;
        if (liveCharged + rest <= budget) {
            return false;
        }
        countLive();
        long est = liveCharged + rest;
        if (est <= budget) {
            return false;
        }
        // off first: composing the text calls JDK methods, whose probes then return at once
        fast = false;
        on = false;
        fail(null, cat(text("the profile data (about ", est >> 20,
                " MB) would pass the budget (a quarter of the heap, ", budget >> 20,
                " MB) as "), what, " grew: recording stopped, counts are incomplete"));
        return true;
    }

    /** Why recording stopped early (null: it did not), for the report. */
    static String failure;
    /** Released when the runtime runs out of memory, so that the report can still be written. */
    static long[] reserve = new long[1 << 16];

    static native long cpuNanos();

    /**
     * clock=cpu: CPU time of live platform thread {@code t} (JVMTI GetThreadCpuTime), -1 if
     * it cannot be read (a virtual thread, a thread that ended). For the dump: the open
     * frames of another thread are charged up to its CPU time now.
     */
    static native long cpuNanosOf(Thread t);

    /**
     * The clock of thread {@code s} now (timed clocks), for charging its open frames in a
     * dump; Long.MIN_VALUE if it cannot be read (then its open frames are not charged).
     */
    static long clockOf(T s) {
        if (clock == 1) {
            return System.nanoTime();
        }
        try {
            if (s.cpuHeld) {
                // a virtual thread not mounted, a carrier running one (see mounted)
                return s.cpuAt;
            }
            Thread t = s.thread;
            if (t == null || s.virt) {
                return Long.MIN_VALUE;
            }
            if (t == Thread.currentThread()) {
                return cpuNanos() - s.cpuOff;
            }
            long v = cpuNanosOf(t);
            return v < 0 ? Long.MIN_VALUE : v - s.cpuOff;
        } catch (Throwable e) {
            // the native is not bound (a runtime build without it): no in-flight time
            return Long.MIN_VALUE;
        }
    }

    /**
     * Set by the agent: {@link #lock0}/{@link #unlock0} take and leave this class's monitor
     * through JNI. The locked sections that probes reach (registration, a new call path, a
     * thread's queue, a failure) use them: a virtual thread waiting there stays on its carrier
     * (a native frame pins it). Waiting in {@code synchronized}, it would unmount and need the
     * scheduler to run again, whose own threads (carriers running instrumented JDK code) may
     * be waiting for the same lock: the JVM hung so. Without the agent (offline), synchronized.
     */
    static boolean jniLock;

    static native boolean lock0();

    static native void unlock0();

    /**
     * Under the agent (see its kind_native): 0 if thread {@code t}'s constructor has not
     * finished, 1 for a platform thread, 2 for a virtual thread. A thread attaching through
     * JNI (e.g. the launcher's DestroyJavaVM at exit) runs its own constructor, and a probe
     * there that waited for the class lock crashed HotSpot (JDK 19+): such a thread is
     * registered at its first probe after the constructor.
     */
    static native int kind0(Thread t);

    /**
     * The threads that ended last (a ring, under the class lock): they are not registered
     * again. A virtual thread still runs JDK code after its end event (JDK 25:
     * Continuation.finish, on the thread, before the carrier unmounts it); the field build
     * marks its Thread GONE, the fallback build (no field) registered it again, as a new
     * thread whose state was never folded (one per virtual thread).
     */
    static Thread[] recentlyEnded = new Thread[256];
    static int recentNext;

    static boolean endedRecently(Thread t) {
        Thread[] r = recentlyEnded;
        for (int i = 0; i < r.length; i++) {
            if (r[i] == t) {
                return true;
            }
        }
        return false;
    }

    /** The last thread found not constructed by {@link #kind0} (its state gets {@link T#early}). */
    static Thread unready;

    static long clockNow() {
        if (clock == 1) {
            return System.nanoTime();
        }
        return cpuNanos();
    }

    /**
     * Stops recording for good after {@code e} (out of memory inside a probe or the runtime,
     * or the budget: {@code e} null): the program goes on unprofiled and the report says so.
     * Never throws.
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
     * After a failure: the live threads' counts so far are moved to their sinks (read racily,
     * like a dump's: a parked or blocked thread's exactly), then their states are dropped
     * (their fields point to GONE, their slots are emptied), as are the pooled states and the
     * tree's lookup table, giving that memory back to the program; no thread registers
     * again, the tree no longer grows and later ended threads' data is dropped. What was
     * recorded (the tree's nodes, the aggregates) stays for the report if it is within the
     * budget, a quarter over it at most (the growth that stopped recording and the live
     * threads' counts); above that (an OutOfMemoryError with more data than the budget
     * allows) it is dropped too and the report says so.
     */
    static void dropLive() {
        if (jniLock && lock0()) {
            try {
                dropLiveLocked();
            } finally {
                unlock0();
            }
            return;
        }
        synchronized (Probes.class) {
            dropLiveLocked();
        }
    }

    static void dropLiveLocked() {
        try {
            for (Slots t = live; t != null; t = t == live ? vlive : null) {
                T[] a = t.a;
                for (int i = 0; i < t.n && i < a.length; i++) {
                    T s = a[i];
                    A sink = s == null ? null : s.sink;
                    if (sink != null) {
                        sink.addThread(s, true);
                        sink.addOpen(s);
                        sink.threads++;
                    }
                }
            }
        } catch (OutOfMemoryError e) {
            if (failure != null && !failure.endsWith(LIVE_LOST)) {
                failure = cat(failure, "", LIVE_LOST);
            }
        }
        live.dropAll();
        vlive.dropAll();
        nLive = 0;
        version++;
        for (int i = 0; i < npool; i++) {
            pool[i] = null;
        }
        npool = 0;
        gTab = new int[1]; // lookups find nothing (child() adds nothing once stopped)
        if (budget > 0 && ended.bytes() + rowsBytes + treeBytes() > budget + (budget >> 2)) {
            long mb = (ended.bytes() + rowsBytes + treeBytes()) >> 20;
            gKey = new long[][] {new long[1 << GS]};
            int[][] c = {new int[1 << GS]};
            c[0][0] = 1;
            gCtx = c;
            gNodes = 1;
            ended = new A("other threads", true);
            rows = new A[0];
            rowsUsed = 0;
            rowsBytes = 0;
            failure = cat(failure == null ? "" : failure,
                    text("; the data recorded (about ", mb, " MB) was over the budget and was dropped"),
                    "");
        }
    }

    static final String LIVE_LOST = "; the live threads' latest counts were lost (no memory to fold them)";

    /**
     * A table of live threads' states by slot (null = free; a slot is reused once its thread
     * ended). Changed under the class lock.
     */
    static final class Slots {
        T[] a = new T[64];
        /** Slots in use or used before (a[n..] are null). */
        int n;
        /** Free slots below n, a stack. */
        int[] free = new int[16];
        int nfree;

        /** Puts {@code s} in a free slot and returns the slot. */
        int take(T s) {
            int slot;
            if (nfree > 0) {
                slot = free[--nfree];
            } else {
                if (n == a.length) {
                    a = copy(a, a.length * 2);
                }
                slot = n++;
            }
            a[slot] = s;
            return slot;
        }

        /** Whether {@code s} holds its slot (and then frees it). */
        boolean release(T s) {
            int slot = s.slot;
            if (slot < 0 || slot >= n || a[slot] != s) {
                return false;
            }
            a[slot] = null;
            if (nfree == free.length) {
                int[] f = new int[free.length * 2];
                System.arraycopy(free, 0, f, 0, nfree);
                free = f;
            }
            free[nfree++] = slot;
            return true;
        }

        /** Empties every slot; their threads' fields point to GONE (recording stopped). */
        void dropAll() {
            for (int i = 0; i < n && i < a.length; i++) {
                T s = a[i];
                a[i] = null;
                if (s != null) {
                    try {
                        unpublish(s);
                    } catch (Throwable e) {
                        // the slot is empty already; the thread's next probe finds nothing
                    }
                }
            }
            n = 0;
            nfree = 0;
        }
    }

    /** Sampler-owned: sampled total time per method (all threads), and a mark per method. */
    static long[] sTotal = new long[0];
    static int[] sMark = new int[0];
    static int mark;

    /**
     * Called by the agent's sampler thread every interval with {@code in = [version, (serial,
     * cpu)*]}: per slot, the serial of the thread the agent read and that thread's CPU time
     * now (-1: not read). The CPU time it used since it was last charged ({@link T#sCpu}) is
     * charged to the thread's current call path (self) and once to every method on its shadow
     * stack (total), if the slot still holds that thread. Reads other threads' stacks racily;
     * writes only sampler-owned data. Returns null if the slots did not change since
     * {@code version}, else {@code [version, serial per slot (-1 free)]}.
     */
    public static long[] sample(long[] in) {
        synchronized (Probes.class) {
            try {
                T[] a = live.a;
                int n = live.n;
                if (n > a.length) {
                    n = a.length;
                }
                if (n > (in.length - 1) / 2) {
                    n = (in.length - 1) / 2;
                }
                for (int i = 0; i < n; i++) {
                    T s = a[i];
                    long cpu = in[2 + 2 * i];
                    if (s != null && s.serial == in[1 + 2 * i] && cpu >= 0) {
                        long ns = s.sCpu < 0 ? 0 : cpu - s.sCpu;
                        if (cpu > s.sCpu) {
                            s.sCpu = cpu;
                        }
                        if (ns > 0 || (s.sNode == 0 && s.sCpu >= 0)) {
                            // (0 ns: a thread not sampled yet that got no CPU time since it
                            // registered, a busy machine; where it is now is kept for
                            // lastSample, which has nothing else to go by)
                            s.sample(ns, ++mark);
                        }
                    }
                }
                if (in.length > 0 && in[0] == version) {
                    return null;
                }
                long[] out = new long[1 + live.n];
                out[0] = version;
                for (int i = 0; i < live.n; i++) {
                    T s = live.a[i];
                    out[1 + i] = s == null ? -1 : s.serial;
                }
                return out;
            } catch (OutOfMemoryError e) {
                fail(e, "out of memory in the sampler");
                return null;
            }
        }
    }

    /**
     * clock=sample: the CPU time of platform thread {@code t} now (JVMTI GetThreadCpuTime;
     * the current thread's own clock), -1 if it cannot be read (not under the agent, a thread
     * that ended).
     */
    static long cpuOf(Thread t) {
        if (!cpuLinked || t == null) {
            return -1;
        }
        try {
            long v = t == Thread.currentThread() ? cpuNanos() : cpuNanosOf(t);
            return v < 0 ? -1 : v;
        } catch (Throwable e) {
            return -1; // the natives are not bound (a runtime build without them)
        }
    }

    /**
     * clock=sample under the agent: {@link #cpuNanos} and {@link #cpuNanosOf} were linked by
     * {@link #start} (a boot class's native is looked up through ClassLoader.findNative, which
     * is instrumented: not from a probe's locked registration).
     */
    static boolean cpuLinked;

    /** The thread in slot {@code i} (for the sampler), null if free. */
    public static Thread thread(int i) {
        synchronized (Probes.class) {
            T s = i >= 0 && i < live.n ? live.a[i] : null;
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
    // else is in enterT0/exit0/exitT0, which are @DontInline (honoured for boot-loader classes):
    // inlining the whole recording code at every call site made C2 spend most of a javac run
    // compiling (perf: 58 % of the CPU in its register allocator), and each call left in an
    // inlined probe costs C2 too. With a per-call clock (`fast` false) every probe goes to
    // enterT0/exit0/exitT0.

    public static void enter(int id) {
        // the same frame as enterT's (its token unused: exit(id) finds the frame by method)
        enterT(id);
    }

    // Frame tokens: the form the agent's own rules use. `enterT` returns the shadow stack's
    // pointer before the frame it pushed (>= 2; -1: no frame pushed), which the instrumented
    // method keeps in a local of its own and hands to `exitT` before each return and to
    // `unwindT` in its catch-all handler: the pointer is restored from it, exactly, with no
    // frame to read or compare, whatever frames above it lost their exit. An exit is a store.

    public static int enterT(int id) {
        if (!fast) {
            return on ? enterT0(id) : -1;
        }
        T s = cur();
        if (s != null) {
            int b = s.sp;
            long[] fr = s.fr;
            if (b + 2 <= fr.length) {
                int ctx = (int) fr[b - 1];
                long[] dm = s.dm;
                int h = slot(dm, ctx, id);
                if (dm[h] == (((long) ctx << 32) | id)) {
                    long v = dm[h + 1];
                    dm[h + 2]++;
                    int c = (int) (v >>> 32);
                    fr[b] = ((long) id << 32) | (v & 0xFFFFFFFFL);
                    fr[b + 1] = c;
                    s.sp = b + 2;
                    return b;
                }
            }
        }
        return enterT0(id);
    }

    public static void exitT(int t) {
        if (t < 2) {
            return;
        }
        if (fast) {
            T s = cur();
            if (s != null) {
                s.sp = t;
                return;
            }
        }
        exitT0(t);
    }

    public static void unwindT(int t) {
        exitT(t);
    }

    /**
     * {@link #mounted} has run: VirtualThread's mount calls it, so a virtual thread may take
     * its carrier's cache when it registers (without the call it would keep the cache of the
     * carrier it registered on after moving to another one).
     */
    static boolean hooked;

    /**
     * A virtual thread was just mounted on a carrier: the rewriter calls this at the end of
     * {@code VirtualThread.mount} (and JDK 21-23's {@code switchToVirtualThread}), after
     * {@code Thread.currentThread()} became the virtual thread and before it runs anything
     * else there. Its state takes the carrier's direct-mapped cache while it runs there (see
     * {@link T#borrow}): a virtual thread lives for a few hundred calls, and with a cache of
     * its own it started cold every time (a JDK 25 run of 10,000 virtual threads: 93 of
     * its ~370 calls missed, and 17 times it moved its queue under the lock). A carrier runs
     * one thread at a time and a probe cannot be unmounted halfway (nothing in it parks; the
     * locked sections pin), so the cache still has one writer at a time. Not with
     * {@code thread=y}: its entries' counts go to the carrier's sink.
     */
    public static void mounted() {
        hooked = true;
        if (!on) {
            return;
        }
        try {
            T s = cur();
            if (clock == 2) {
                T c = carrierState();
                long x = cpuNanos();
                if (c != null && !c.cpuHeld) {
                    c.cpuAt = x - c.cpuOff;
                    c.cpuHeld = true;
                }
                if (s != null && s.virt && s.cpuHeld) {
                    s.cpuOff = x - s.cpuAt;
                    s.cpuHeld = false;
                }
            }
            if (s != null && s.virt && !perThread) {
                s.borrow(carrierState());
            }
        } catch (RuntimeException e) {
            fail(e, BUG_PROBE);
        }
    }

    // clock=cpu and virtual threads: a probe reads the CPU time of the OS thread it runs on,
    // which for a virtual thread is its carrier's, running on while the virtual thread is not
    // mounted (other virtual threads, the scheduler), and a carrier's frames (runContinuation)
    // are open while it runs virtual threads. So each state's clock is the OS thread's CPU
    // time minus T.cpuOff, and it stands still at T.cpuAt while T.cpuHeld: a virtual thread's
    // from its unmount to its next mount, a carrier's while a virtual thread is mounted on it.
    // mounted() stops the carrier's clock and starts the virtual thread's, unmounting() the
    // other way round, so every CPU nanosecond of the OS thread is on one clock at a time.

    /**
     * A virtual thread is about to be unmounted (or, JDK 21-23, to run code as its carrier):
     * the rewriter calls this at the entry of {@code VirtualThread.unmount} (and
     * {@code switchToCarrierThread}), while {@code Thread.currentThread()} is still the
     * virtual thread. clock=cpu: its clock stops, its carrier's goes on (see above).
     */
    public static void unmounting() {
        if (clock != 2 || !on) {
            return;
        }
        try {
            T s = cur();
            T c = carrierState();
            long y = cpuNanos();
            if (s != null && s.virt && !s.cpuHeld) {
                s.cpuAt = y - s.cpuOff;
                s.cpuHeld = true;
            }
            if (c != null && c.cpuHeld) {
                c.cpuOff = y - c.cpuAt;
                c.cpuHeld = false;
            }
        } catch (RuntimeException e) {
            fail(e, BUG_PROBE);
        }
    }

    // The tracing runtime (java.lang.BciTrace) pauses a thread's recording while it works on
    // that thread (an event formatted, an argument boxed, its per-thread state made): the JDK
    // methods it calls there, and a program's toString() it calls for `tostring = true`, are
    // not the program's calls and are not counted. The fast paths have no test for it: in the
    // field build the thread's field points to PAUSED meanwhile, on which they all miss, and
    // the slow paths (self()) record nothing for PAUSED; the fallback build marks the state
    // (T.paused), takes it out of `last` (its fast path's only way to find a state) and
    // self() gives nothing for it.

    /**
     * Pauses recording on the calling thread; returns the token to give {@link #resume}
     * (null: nothing to undo). Pauses nest. Never throws (no call but natives).
     */
    public static Object pause() {
        return pause0();
    }

    /** Ends the pause that returned {@code token} (null: does nothing). */
    public static void resume(Object token) {
        if (token != null) {
            resume0(token);
        }
    }

    @DontInline
    static int enterT0(int id) {
        if (!on) {
            return -1;
        }
        T s = self();
        if (s != null) {
            try {
                int b = s.sp;
                s.enter(id);
                return s.sp == b + 2 ? b : -1;
            } catch (OutOfMemoryError e) {
                fail(e, OOM_PROBE);
            } catch (RuntimeException e) {
                fail(e, BUG_PROBE);
            }
        }
        return -1;
    }

    @DontInline
    static void exitT0(int t) {
        if (!on) {
            return;
        }
        T s = self();
        if (s != null) {
            try {
                s.exitTo(t);
            } catch (OutOfMemoryError e) {
                fail(e, OOM_PROBE);
            } catch (RuntimeException e) {
                fail(e, BUG_PROBE);
            }
        }
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
            int k = b - 2;
            if ((int) (fr[k] >>> 32) != id) {
                // rare: frames above this method's lost their exit (e.g. an error inside a
                // probe), or it has none (entered before recording started)
                k -= 2;
                while (k >= 2 && (int) (fr[k] >>> 32) != id) {
                    k -= 2;
                }
                if (k < 2) {
                    if (!s.early) {
                        s.mismatches++;
                    }
                    return;
                }
                s.mismatches += (b - 2 - k) >> 1;
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
                enterT0(id);
            }
            return;
        }
        T s = cur();
        int k;
        long[] fr;
        // k < fr.length: GONE and PAUSED (shared, a two-slot stack) may hold the token of an
        // exit that ran after the thread's end (a virtual thread's JDK frames): miss there
        // instead of throwing into the program (the JIT's own range check, made explicit)
        if (s != null && (k = s.sp - 1) < (fr = s.fr).length) {
            // the context of the top frame's callees (fr[0..2) is the root frame)
            int ctx = (int) fr[k];
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
    static void exit0(int id) {
        if (!on) {
            return;
        }
        T s = self();
        if (s != null) {
            try {
                s.exit(id);
            } catch (OutOfMemoryError e) {
                fail(e, OOM_PROBE);
            } catch (RuntimeException e) {
                fail(e, BUG_PROBE);
            }
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

    /**
     * The current thread's state, registered on first use; null while registering and while
     * its recording is paused.
     */
    static T self() {
        Thread t = Thread.currentThread();
        T l = last;
        if (l != null && l.thread == t) {
            return l.paused ? null : l;
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
                if (s.paused) {
                    return null; // and not in `last`, where cur() would find it
                }
                if (!timed) {
                    last = s;
                }
                return s;
            }
            i = (i + 1) & m;
        }
    }

    /**
     * See {@link #pause}. A thread with no state is registered first (so that the probes it
     * runs while paused find a paused state, not none, which they would register); no state
     * is registered while no thread ever registered (tracing rules alone: no class calls a
     * probe).
     */
    static Object pause0() {
        if (nextSerial == 0) {
            return null;
        }
        T s = self();
        if (s == null) {
            return null; // paused already, registering, or recording stopped
        }
        s.paused = true;
        if (last == s) {
            last = null;
        }
        return s;
    }

    static void resume0(Object token) {
        ((T) token).paused = false;
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
    /** The state of the current carrier thread (see {@link #mounted}): none in this build. */
    static T carrierState() {
        return null;
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
        return s == GONE || s == PAUSED ? null : s;
    }

    // See pause(): the field points to PAUSED until resume0 puts the state back (UNSET: the
    // thread had none).
    static Object pause0() {
        Thread t = Thread.currentThread();
        T s = t.bci$t;
        t.bci$t = PAUSED;
        return s == null ? UNSET : s;
    }

    static void resume0(Object token) {
        Thread t = Thread.currentThread();
        if (t.bci$t != PAUSED) {
            return; // recording stopped meanwhile (dropLive: GONE)
        }
        T s = token == UNSET ? null : (T) token;
        t.bci$t = s;
        if (s != null && s.virt && hooked && !perThread) {
            // a virtual thread unmounted while paused (JDK 24+: a contended monitor) may run
            // on another carrier now, whose mounted() found PAUSED: take that carrier's cache
            s.borrow(carrierState());
        }
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

    // The state of the platform thread running the current thread (JDK 21+: the carrier of a
    // virtual thread; called only where virtual threads exist), null if it has none.
    static T carrierState() {
        T c = Thread.currentCarrierThread().bci$t;
        return c == GONE || c == PAUSED ? null : c;
    }
    @thread-lookup field end */

    static T register(Thread t, int h) {
        if (t == null || registering == t) {
            return null;
        }
        int kind = jniLock ? kind0(t) : 1;
        if (kind == 0) {
            // its constructor is still running (see kind0); the methods it is in exit
            // after it registers, with no frame: expected, like an early thread's
            unready = t;
            return null;
        }
        if (jniLock && lock0()) {
            try {
                return registerLocked(t, h, kind == 2);
            } finally {
                unlock0();
            }
        }
        synchronized (Probes.class) {
            return registerLocked(t, h, kind == 2);
        }
    }

    /**
     * Registers thread {@code t} (identity hash {@code h}; {@code virt}: a virtual thread);
     * under the class lock.
     */
    static T registerLocked(Thread t, int h, boolean virt) {
        T s = registered(t, h);
        if (s != null) {
            return s;
        }
        if (failure != null || endedRecently(t)) {
            return null; // recording stopped for good, or its end was folded already
        }
        registering = t;
        try {
            String name = null;
            try {
                name = t.getName();
            } catch (Throwable e) {
                name = null;
            }
            if (budget > 0) {
                long est = overBudget();
                if (est >= 0) {
                    fail(null, text("the profile data (about ", est >> 20, " MB for ",
                            nLive, " live threads) would exceed a quarter of the heap:"
                            + " recording stopped, counts are incomplete"));
                    return null;
                }
            }
            if (npool > 0) {
                s = pool[--npool];
                pool[npool] = null;
                if (s.bytes() > ALLOWANCE) {
                    grown++;
                }
                s.thread = t;
                s.hash = h;
                s.serial = nextSerial++;
                s.name = name;
            } else {
                s = new T(t, nextSerial++, name, false);
                statesMade++;
            }
            s.early = t == unready || startedEarly(t);
            if (t == unready) {
                unready = null;
            }
            if (++nLive > maxLive) {
                maxLive = nLive;
            }
            s.virt = virt;
            if (!virt && clock == 0) {
                // the sampler charges its CPU time from here (-1: from its first sample)
                s.sCpu = cpuOf(t);
            }
            if (virt && clock == 2 && hooked) {
                // its clock starts now, at 0 (mounted: the OS thread is its own)
                s.cpuOff = cpuNanos();
            }
            if (virt && !perThread && hooked) {
                T c = carrierState();
                if (c != null) {
                    // no cache of its own while it borrows one (a pooled state's counts
                    // are zero: reset)
                    s.dm = T.NO_DM;
                    s.borrow(c);
                }
            }
            s.slot = virt ? vlive.take(s) : live.take(s);
            s.row = perThread && rowsUsed < ROWS ? rowsUsed++ : -1;
            if (s.row >= 0) {
                if (s.row >= rows.length) {
                    A[] r = new A[rows.length < 16 ? 16 : rows.length * 2];
                    System.arraycopy(rows, 0, r, 0, rows.length);
                    rows = r;
                }
                rows[s.row] = new A(name, true);
                s.sink = rows[s.row];
            } else {
                s.sink = ended;
            }
            if (!virt) {
                version++;
            }
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
            if (s == null || s == GONE || s == PAUSED || !(s.virt ? vlive : live).release(s)) {
                return;
            }
            if (!s.virt) {
                version++;
            }
            nLive--;
            liveChanges++;
            unpublish(s);
            recentlyEnded[recentNext] = t;
            recentNext = (recentNext + 1) & (recentlyEnded.length - 1);
            // its name now (at registration it may not have had it yet: a thread attaching
            // through JNI registers inside its own constructor's callees)
            s.name = nameOf(t, s.name);
            if (s.row >= 0 && s.row < rows.length && rows[s.row] != null) {
                rows[s.row].name = s.name;
            }
            if (failure != null) {
                return; // recording stopped: its data is dropped, to give memory back
            }
            try {
                if (clock == 0 && !s.virt) {
                    // the CPU time since its last sample (a thread shorter than the interval:
                    // all of it, when it was sampled once)
                    s.lastSample(cpuOf(t));
                }
                A a = s.sink;
                if (a != null) {
                    a.addThread(s, true);
                    // frames still open (System.exit from deep frames: HotSpot sends the
                    // exiting thread's ThreadEnd before VMDeath) are charged up to now
                    a.addOpen(s);
                    a.threads++;
                    if (s.row >= 0) {
                        rowsBytes += a.bytes();
                    }
                }
                // its state serves a later thread (unless it grew large)
                if (npool < pool.length && s.fr.length <= 2 * 64 && s.ownDm().length <= 4 * 256
                        && s.q.length <= 64) {
                    s.reset();
                    pool[npool++] = s;
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
        if (jniLock) {
            // links the native now, while the probes are off (a native of a boot class is
            // looked up through ClassLoader.findNative, which is instrumented)
            kind0(Thread.currentThread());
        }
        T t = new T(Thread.currentThread(), -1, "self-test", false);
        A a = new A("self-test");
        t.sink = a;
        t.enter(0);
        t.leafEnter(1);
        t.exit(0);
        t.enter(0);
        t.exitTo(2);
        t.timer(0, 1);
        t.put(1, 1);
        t.drain();
        synchronized (Probes.class) {
            t.sample(1, 1);
            a.addThread(t, true);
            new Out(a, a.overlay("self-test"), gNodes).all();
            t.reset();
        }
        if (timed) {
            clockNow();
        }
        if (clock == 0 && jniLock) {
            try {
                cpuNanos();
                cpuNanosOf(Thread.currentThread());
                cpuLinked = true;
            } catch (Throwable e) {
                // a runtime without the natives: threads' last moments are not charged
                cpuLinked = false;
            }
        }
        synchronized (Probes.class) {
            sTotal = new long[0]; // the self-test's sample
            sMark = new int[0];
        }
        budget = testBudget > 0 ? testBudget : Runtime.getRuntime().maxMemory() / 4;
        fast = !timed;
        on = true;
    }

    /**
     * Stops recording (called by the agent before it reads the data at VM death). clock=sample:
     * then takes a last sample of every live platform thread (see {@link T#lastSample}), after
     * the sampler's last one: the CPU time they used since it is charged too.
     */
    public static void stop() {
        fast = false;
        on = false;
        if (clock != 0 || !jniLock) {
            return;
        }
        synchronized (Probes.class) {
            try {
                for (int i = 0; i < live.n; i++) {
                    T s = live.a[i];
                    if (s != null) {
                        s.lastSample(cpuOf(s.thread));
                    }
                }
            } catch (RuntimeException | OutOfMemoryError e) {
                fail(e, "out of memory in the sampler");
            }
        }
    }

    // The dump: snapshot() takes every thread's data under the class lock (no thread is folded
    // or added meanwhile: nothing counted twice or missed), then the agent reads it by index,
    // still holding the lock (it takes it before the snapshot and leaves it after the last
    // part, see the agent's runtime::collect; Offline likewise): the aggregates are read as
    // they are, not copied (a large profile's copy did not fit a tight heap, and the dump
    // lost everything), and only what live threads hold outside them (their caches and
    // queues, small) is gathered apart for the dump. The tree does not grow meanwhile either.
    static String[] snapNames = new String[0];
    static Out[] snapData = new Out[0];

    /**
     * Takes the data to report: thread=n, the ended threads' aggregate then each live thread;
     * thread=y, one entry per row (an ended thread's row or a live thread's) in registration
     * order, then "other threads" (ended and live threads beyond {@link #ROWS}) if any. Returns
     * the number of entries. Live threads are read racily while they run (each value whole).
     * The caller holds the class lock until it has read the last entry. Never throws: out of
     * memory here, recording stops (the live threads' counts folded into the aggregates, their
     * memory given back) and the aggregates alone are taken.
     */
    public static int snapshot() {
        synchronized (Probes.class) {
            try {
                return snapshot0();
            } catch (OutOfMemoryError e) {
                snapNames = new String[0];
                snapData = new Out[0];
                fail(e, "out of memory taking the report's snapshot: recording stopped, counts are"
                        + " incomplete");
            } catch (RuntimeException e) {
                fail(e, BUG_DUMP);
            }
            try {
                return snapshot0();
            } catch (Throwable e) {
                snapNames = new String[0];
                snapData = new Out[0];
                return 0;
            }
        }
    }

    static final String BUG_DUMP =
            "internal error in the runtime's dump (a bug): recording stopped, counts are incomplete";

    static int snapshot0() {
        {
            snapNames = new String[0];
            snapData = new Out[0];
            int n = 0;
            int g = gNodes;
            // the live threads: platform, then virtual
            int nl = live.n + vlive.n;
            T[] lv = new T[nl];
            System.arraycopy(live.a, 0, lv, 0, live.n);
            System.arraycopy(vlive.a, 0, lv, live.n, vlive.n);
            String[] names = new String[1 + nl + rowsUsed];
            Out[] data = new Out[names.length];
            if (!perThread) {
                // one entry for all counts; a live thread with mismatches also gets an entry
                // of its own, without counts, that names it (the report lists such threads)
                A sum = ended.overlay("ended threads");
                for (int i = 0; i < nl; i++) {
                    T s = lv[i];
                    if (s != null) {
                        sum.addThread(s, false);
                        sum.addOpen(s);
                    }
                }
                names[n] = sum.name;
                data[n++] = new Out(ended, sum, g);
                for (int i = 0; i < nl; i++) {
                    T s = lv[i];
                    long mm = s == null ? 0 : s.mismatches;
                    if (mm > 0) {
                        s.name = nameOf(s.thread, s.name);
                        A one = new A(s.name);
                        one.mismatches = mm;
                        names[n] = s.name;
                        data[n++] = new Out(null, one, g);
                    }
                }
            } else {
                A other = ended.overlay("other threads");
                T[] byRow = new T[rowsUsed];
                for (int i = 0; i < nl; i++) {
                    T s = lv[i];
                    if (s == null) {
                        continue;
                    }
                    if (s.row >= 0 && s.row < byRow.length) {
                        byRow[s.row] = s;
                    } else {
                        other.addThread(s, true);
                        other.addOpen(s);
                        other.threads++;
                    }
                }
                for (int r = 0; r < rowsUsed && r < rows.length; r++) {
                    if (rows[r] == null) {
                        continue;
                    }
                    if (byRow[r] != null) {
                        // a live thread's name now (see nameOf)
                        byRow[r].name = nameOf(byRow[r].thread, byRow[r].name);
                        rows[r].name = byRow[r].name;
                    }
                    A row = rows[r].overlay(rows[r].name);
                    if (byRow[r] != null) {
                        row.addThread(byRow[r], true);
                        row.addOpen(byRow[r]);
                    }
                    names[n] = row.name;
                    data[n++] = new Out(rows[r], row, g);
                }
                if (other.threads > 0) {
                    names[n] = "other threads";
                    data[n++] = new Out(ended, other, g);
                }
            }
            snapNames = names;
            snapData = data;
            return n;
        }
    }

    /**
     * Thread {@code t}'s name now, {@code old} if it cannot be read. The name taken when a
     * thread registers may not be its name yet: a thread attaching through JNI (the
     * launcher's DestroyJavaVM, which runs the shutdown hooks) registers at its first probe,
     * before the JVM named it, and the report called it "" (thread=y's THREAD START) and
     * "thread-N" (collapsed). So a dump and a thread's end read it again. The calling
     * thread's recording is paused meanwhile (Thread.getName is instrumented: not the
     * program's call).
     */
    static String nameOf(Thread t, String old) {
        if (t == null) {
            return old;
        }
        // (under the class lock, like every change of `registering`: the calling thread is
        // not registered meanwhile, which would change the tables the caller reads)
        Thread was = registering;
        registering = Thread.currentThread();
        Object p = null;
        try {
            p = pause0();
            String n = t.getName();
            return n == null ? old : n;
        } catch (Throwable e) {
            return old;
        } finally {
            if (p != null) {
                resume0(p);
            }
            registering = was;
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
        Out[] a = snapData;
        Out o = i >= 0 && i < a.length ? a[i] : null;
        return o == null ? null : new Out(o.base, o.a, o.g).all();
    }

    /**
     * The next part of {@link #export(int)}'s array for entry {@code i} of the last {@link
     * #snapshot} (the parts in order make that array), null after the last part: the agent
     * reads a large profile a part at a time.
     */
    public static long[] exportNext(int i) {
        Out[] a = snapData;
        Out o = i >= 0 && i < a.length ? a[i] : null;
        long[] c;
        try {
            c = o == null ? null : o.next();
        } catch (OutOfMemoryError e) {
            // the reserve given back, and parts of a few nodes from here on; recording
            // stops, the live threads' data dropped once the dump is read ({@link #dumped}):
            // folding it now would count it twice, in the aggregates and in this dump
            reserve = null;
            o.small = true;
            stopAfterDump("out of memory writing the report: recording stopped, counts are"
                    + " incomplete");
            try {
                c = o.next();
            } catch (OutOfMemoryError e2) {
                a[i] = null;
                throw e2;
            }
        }
        if (c == null && o != null) {
            a[i] = null; // read: its part of the data is no longer kept
        }
        return c;
    }

    /** Set when recording stopped during a dump: {@link #dumped} drops the live threads' data. */
    static boolean dropAfterDump;

    static void stopAfterDump(String why) {
        fast = false;
        on = false;
        if (failure == null) {
            failure = why;
        }
        dropAfterDump = true;
    }

    /**
     * The agent read the last snapshot (still under the class lock): its data is let go, and
     * what recording stopped during the dump left for later is done now (see {@link #fail}).
     */
    public static void dumped() {
        synchronized (Probes.class) {
            snapNames = new String[0];
            snapData = new Out[0];
            if (dropAfterDump) {
                dropAfterDump = false;
                fail(null, failure);
            }
        }
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

    /** a + x + b, without the JDK's string concatenation. */
    static String text(String a, long x, String b) {
        char[] out = new char[a.length() + b.length() + 20];
        int o = put(out, 0, a);
        o = put(out, o, x);
        o = put(out, o, b);
        return new String(out, 0, o);
    }

    /** a + b + c, without the JDK's string concatenation. */
    static String cat(String a, String b, String c) {
        char[] out = new char[a.length() + b.length() + c.length()];
        int o = put(out, 0, a);
        o = put(out, o, b);
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

    /** Thread states made (not taken from the pool), for the log. */
    static long statesMade;

    /** Queues moved to a sink under the class lock (for the log). */
    static long drainsLocked;

    /**
     * For the log (verbose=y): {@code [call-path nodes, bytes of the shared tree, bytes of the
     * sinks, live threads, thread states made, threads registered, most threads live at once,
     * slots of the sampler's table (platform threads), slots of the virtual threads' table,
     * bytes of the live threads' states, queues drained under the lock]}.
     */
    public static long[] memory() {
        synchronized (Probes.class) {
            countLive();
            return new long[] {gNodes, treeBytes(), ended.bytes() + rowsBytes, nLive, statesMade,
                    nextSerial, maxLive, live.n, vlive.n, liveBytes, drainsLocked};
        }
    }

    /** Why recording stopped early, or null. */
    public static String failure() {
        return failure;
    }

    /**
     * Counts of many threads, or of one thread (thread=y rows), by node of the shared call-path
     * tree: calls and self time per node (only the nodes these threads ran, see {@link
     * NodeMap}), per-method totals (timed clocks) and statistics. Where live threads move
     * their counts (see {@link T#drain}) and ended threads' data is folded ({@link #ended}).
     * Changed only under the class lock.
     */
    static final class A {
        /** The thread's name (a thread=y row: renamed when its thread ends, see nameOf). */
        String name;
        /** Threads folded in. */
        long threads;
        /** Calls per node. */
        NodeMap cnt = new NodeMap();
        /** Self time per node (clock=sample: only the nodes a sample found running). */
        NodeMap slf = new NodeMap();
        long[] total = new long[0];
        long mismatches;
        long misses;
        long slowEnters;
        long[] tmCount = new long[0];
        long[] tmTotal = new long[0];

        A(String name) {
            this.name = name;
        }

        /** {@code sink}: recorded data (the budget is checked when its maps grow). */
        A(String name, boolean sink) {
            this.name = name;
            cnt.sink = sink;
            slf.sink = sink;
        }

        /** Adds {@code c} calls and {@code sl} ns of self time to node {@code node}. */
        void add(int node, long c, long sl) {
            if (node <= 0) {
                return;
            }
            if (c != 0) {
                cnt.add(node, c);
            }
            if (sl != 0) {
                slf.add(node, sl);
            }
        }

        /** Adds the first {@code n} longs of a thread's queue (see {@link T#put}). */
        void addQueue(long[] q, int n) {
            int g = gNodes;
            for (int k = 0; k + 1 < n && k + 1 < q.length; k += 2) {
                long kn = q[k];
                int node = (int) kn;
                if (node > 0 && node < g) {
                    if ((kn >>> 32) == 0) {
                        add(node, q[k + 1], 0);
                    } else {
                        add(node, 0, q[k + 1]);
                    }
                }
            }
        }

        /**
         * Adds thread {@code s}'s data not in a sink yet: counts still in its cache entries and
         * its queue, its per-method totals (timed clocks), timers and statistics (its
         * mismatches if {@code mism}). Reads a live thread racily (each value whole; a count
         * the thread moves meanwhile can be missed or seen twice).
         */
        void addThread(T s, boolean mism) {
            int g = gNodes;
            // its own cache only: a borrowed one is its carrier's, counted with the carrier
            long[] dm = s.ownDm();
            for (int h = 0; h + 3 < dm.length; h += 4) {
                int node = (int) dm[h + 1];
                long c = dm[h + 2];
                if (dm[h] != -1L && c != 0 && node > 0 && node < g) {
                    add(node, c, 0);
                }
            }
            addQueue(s.q, s.nq);
            long[] md = s.md;
            int[] mk = s.mdKey;
            if (md.length == 2 * mk.length) {
                for (int k = 0; k < mk.length; k++) {
                    int id = mk[k] - 1;
                    if (id >= 0) {
                        if (id >= total.length) {
                            total = T.copy(total, id + 1 > 2 * total.length ? id + 1 : 2 * total.length);
                        }
                        total[id] += md[2 * k + 1];
                    }
                }
            }
            addTimers(s.tmCount, s.tmTotal);
            if (mism) {
                mismatches += s.mismatches;
            }
            misses += s.misses;
            slowEnters += s.slowEnters;
        }

        /**
         * Timed clocks: charges the frames still on live thread {@code s}'s shadow stack (calls
         * that have not returned yet) up to now, as HPROF charged a thread's open frames at a
         * dump or when the thread ended: each frame's self time so far to its node, and the
         * time so far of each method's outermost open frame to its total. Into this copy
         * only: the thread's own state is not changed (its exits later charge their whole
         * time, once). Reads the stack racily (each value whole, indices checked; a frame the
         * owner pushes or pops meanwhile may be charged inexactly or skipped, never twice).
         */
        void addOpen(T s) {
            if (!timed) {
                return;
            }
            long now = clockOf(s);
            if (now == Long.MIN_VALUE) {
                return;
            }
            int g = gNodes;
            int b = s.sp;
            long[] fr = s.fr;
            long[] ft = s.ft;
            int n = fr.length < ft.length ? fr.length : ft.length;
            if (b > n) {
                b = n;
            }
            b &= ~1;
            if (b <= 2) {
                return;
            }
            int nf = (b - 2) >> 1;
            int[] ids = new int[nf];
            long[] els = new long[nf];
            long child = 0;
            for (int k = b - 2, i = nf - 1; k >= 2; k -= 2, i--) {
                long f = fr[k];
                long el = now - ft[k];
                if (el < 0) {
                    el = 0;
                }
                long self = el - ft[k + 1] - child;
                int node = (int) f;
                if (self > 0 && node > 0 && node < g) {
                    add(node, 0, self);
                }
                ids[i] = (int) (f >>> 32);
                els[i] = el;
                child = el;
            }
            // totals: each method's outermost open frame (the bottom-most on the stack)
            int m = 16;
            while (m < 2 * nf) {
                m <<= 1;
            }
            int[] seen = new int[m];
            for (int i = 0; i < nf; i++) {
                int id = ids[i];
                if (id < 0) {
                    continue;
                }
                int h = (id * 0x9E3779B1) & (m - 1);
                while (seen[h] != 0 && seen[h] != id + 1) {
                    h = (h + 1) & (m - 1);
                }
                if (seen[h] != 0) {
                    continue; // an inner (recursive) frame: its time is in the outer one's
                }
                seen[h] = id + 1;
                if (id >= total.length) {
                    total = T.copy(total, id + 1 > 2 * total.length ? id + 1 : 2 * total.length);
                }
                total[id] += els[i];
            }
        }

        private void addTimers(long[] tc, long[] tt) {
            int nt = tc.length < tt.length ? tc.length : tt.length;
            if (nt > tmCount.length) {
                tmCount = T.copy(tmCount, nt);
                tmTotal = T.copy(tmTotal, nt);
            }
            for (int k = 0; k < nt; k++) {
                tmCount[k] += tc[k];
                tmTotal[k] += tt[k];
            }
        }

        /**
         * For a dump: what the dump adds to this sink, named {@code name}: its per-method data
         * and statistics copied (a value per method, small), its counts per node not (the dump
         * reads them from this sink, under the class lock: {@link Out}); the live threads'
         * counts not yet in the sink are added to the overlay's own maps.
         */
        A overlay(String name) {
            A a = new A(name);
            a.threads = threads;
            a.total = total.clone();
            a.mismatches = mismatches;
            a.misses = misses;
            a.slowEnters = slowEnters;
            a.tmCount = tmCount.clone();
            a.tmTotal = tmTotal.clone();
            return a;
        }

        /** About the bytes it takes. */
        long bytes() {
            return 64 + cnt.bytes() + slf.bytes() + 8L * total.length + 16L * tmCount.length;
        }

        /** Flattened for the agent (the layout of {@link Probes#export(int)}), whole. */
        long[] export() {
            return new Out(null, this, gNodes).all();
        }
    }

    /**
     * A value per node of the shared tree (calls or self time), 0 for the nodes not in it:
     * hashed (open addressing on the node, 12 bytes a slot, load at most 3/4) while few nodes
     * have one, dense (by node, in chunks of 1 << GS nodes, 8 bytes a node, a chunk allocated
     * when one of its nodes gets a value) once the hashed form would take more.
     */
    static final class NodeMap {
        /** Hashed: node + 1, 0 = empty. */
        int[] key = new int[16];
        long[] val = new long[16];
        int used;
        /** Dense (non-null): the values by node; key and val are then unused. */
        long[][] dense;
        /**
         * A sink's map (recorded data): the budget is checked before it grows ({@link
         * Probes#overBudgetBy}, under the class lock like every change of a sink), not for a
         * dump's own maps.
         */
        boolean sink;

        void add(int node, long v) {
            if (dense != null) {
                addDense(node, v);
                return;
            }
            int i = slot(node);
            if (key[i] == 0) {
                if ((used + 1) * 4L > key.length * 3L) {
                    if (24L * key.length >= 8L * gNodes && gNodes > (1 << GS)) {
                        if (sink && overBudgetBy(8L * gNodes, "the aggregates")) {
                            add(node, v); // recording stopped (live threads folded in): again
                            return;
                        }
                        toDense();
                        addDense(node, v);
                        return;
                    }
                    if (sink && overBudgetBy(24L * key.length, "the aggregates")) {
                        add(node, v);
                        return;
                    }
                    grow();
                    i = slot(node);
                }
                key[i] = node + 1;
                used++;
            }
            val[i] += v;
        }

        long get(int node) {
            long[][] d = dense;
            if (d != null) {
                int c = node >>> GS;
                long[] a = c < d.length ? d[c] : null;
                return a == null ? 0 : a[node & GM];
            }
            int i = slot(node);
            return key[i] == 0 ? 0 : val[i];
        }

        private int slot(int node) {
            int m = key.length - 1;
            int i = (node * 0x9E3779B1) & m;
            while (key[i] != 0 && key[i] != node + 1) {
                i = (i + 1) & m;
            }
            return i;
        }

        private void grow() {
            int[] ok = key;
            long[] ov = val;
            key = new int[ok.length * 2];
            val = new long[key.length];
            for (int k = 0; k < ok.length; k++) {
                if (ok[k] != 0) {
                    int i = slot(ok[k] - 1);
                    key[i] = ok[k];
                    val[i] = ov[k];
                }
            }
        }

        private void addDense(int node, long v) {
            int c = node >>> GS;
            if (c >= dense.length) {
                long[][] d = new long[c + 1 > 2 * dense.length ? c + 1 : 2 * dense.length][];
                System.arraycopy(dense, 0, d, 0, dense.length);
                dense = d;
            }
            long[] a = dense[c];
            if (a == null) {
                if (sink && overBudgetBy(8L << GS, "the aggregates")) {
                    addDense(node, v);
                    return;
                }
                a = new long[1 << GS];
                dense[c] = a;
            }
            a[node & GM] += v;
        }

        private void toDense() {
            int[] ok = key;
            long[] ov = val;
            dense = new long[((gNodes - 1) >>> GS) + 1][];
            key = T.NO_INTS;
            val = T.NO_LONGS;
            used = 0;
            for (int k = 0; k < ok.length; k++) {
                if (ok[k] != 0) {
                    addDense(ok[k] - 1, ov[k]);
                }
            }
        }

        long bytes() {
            if (dense == null) {
                return 12L * key.length;
            }
            long b = 8L * dense.length;
            for (long[] a : dense) {
                if (a != null) {
                    b += 8L * a.length;
                }
            }
            return b;
        }
    }

    /**
     * One entry of a snapshot on its way to the agent, flattened in the layout of {@link
     * Probes#export(int)} and handed out in chunks ({@link #next}): the nodes that have counts
     * and their prefixes, renumbered in tree order (a prefix before its node), then totals,
     * statistics and timers. The whole array is never built (a large profile's is tens of MB),
     * nor is the data copied: a node's values are those of the sink ({@link #base}, read as
     * it is under the class lock, which the reader holds) plus the dump's overlay ({@link
     * #a}: the live threads' counts not in the sink yet). What it allocates is a bit per node
     * and an int per 64 nodes (the numbering; without them, every node of the tree is handed
     * out, numbered as it is) and one chunk at a time.
     */
    static final class Out {
        /** Node records per chunk ({@link #small}: {@link #SMALL_CHUNK}). */
        static final int CHUNK = 1 << 14;
        static final int SMALL_CHUNK = 1 << 8;
        /** The sink read as it is (null: the overlay alone). */
        final A base;
        /** The dump's own part, and the per-method data, statistics and timers. */
        final A a;
        /** Nodes in the tree when the entry was taken (the entry has none beyond). */
        final int g;
        /** Bit k: node k is handed out; null until numbered (or if there was no memory). */
        long[] mark;
        /** By word of {@link #mark}: the index in the output of its first marked node. */
        int[] rank;
        /** Numbered (all: every node, by its own number, when the marks did not fit). */
        boolean numbered;
        int ne;
        /**
         * The next node of the tree to hand out (0: nothing handed out yet); g once all are
         * out, g + 1 after the tail.
         */
        int k;
        /** Out of memory once: small chunks from here on. */
        boolean small;

        Out(A base, A a, int g) {
            this.base = base;
            this.a = a;
            this.g = g;
        }

        long count(int node) {
            return (base == null ? 0 : base.cnt.get(node)) + a.cnt.get(node);
        }

        long self(int node) {
            return (base == null ? 0 : base.slf.get(node)) + a.slf.get(node);
        }

        private void number() {
            int g = this.g;
            long[] mark;
            int[] rank;
            try {
                mark = new long[(g + 63) >>> 6];
                rank = new int[mark.length];
            } catch (OutOfMemoryError e) {
                // every node, numbered as it is (nodes without counts come out as zeros)
                numbered = true;
                ne = g;
                return;
            }
            // from the deepest node numbers down: a prefix has a lower number than its node
            for (int k = g - 1; k > 0; k--) {
                if ((mark[k >>> 6] & (1L << k)) != 0 || count(k) != 0 || self(k) != 0) {
                    mark[k >>> 6] |= 1L << k;
                    int p = (int) (~gkey(k) >>> 32);
                    if (p > 0 && p < g) {
                        mark[p >>> 6] |= 1L << p;
                    }
                }
            }
            int n = 1;
            for (int w = 0; w < mark.length; w++) {
                rank[w] = n;
                n += bits(mark[w]);
            }
            this.mark = mark;
            this.rank = rank;
            this.ne = n;
            numbered = true;
        }

        /** Node {@code k}'s index in the output, 0 if it is not handed out. */
        private int loc(int k) {
            long[] m = mark;
            if (m == null) {
                return k; // every node
            }
            long w = m[k >>> 6];
            long bit = 1L << k;
            return (w & bit) == 0 ? 0 : rank[k >>> 6] + bits(w & (bit - 1));
        }

        /** Bits set in {@code x} (not Long.bitCount: a JDK method, instrumented). */
        static int bits(long x) {
            x = x - ((x >>> 1) & 0x5555555555555555L);
            x = (x & 0x3333333333333333L) + ((x >>> 2) & 0x3333333333333333L);
            x = (x + (x >>> 4)) & 0x0f0f0f0f0f0f0f0fL;
            return (int) ((x * 0x0101010101010101L) >>> 56);
        }

        /** The next chunk of the flattened entry; null once all of it was handed out. */
        long[] next() {
            if (k > g) {
                return null;
            }
            // (k moves on only once a chunk is made: out of memory, the same chunk is asked again)
            boolean first = k == 0;
            if (!numbered) {
                number();
            }
            int from = first ? 1 : k;
            if (from < g) {
                int max = small ? SMALL_CHUNK : CHUNK;
                int n = 0;
                int j = from;
                for (; j < g && n < max; j++) {
                    if (loc(j) > 0) {
                        n++;
                    }
                }
                long[] out = new long[(first ? 5 : 0) + 4 * n];
                int o = 0;
                if (first) {
                    out[o++] = ne;
                    o += 4; // node 0: the root
                }
                for (int x = from; x < j; x++) {
                    if (loc(x) > 0) {
                        long kk = ~gkey(x);
                        int p = (int) (kk >>> 32);
                        out[o++] = p > 0 && p < g ? loc(p) : 0;
                        out[o++] = (int) kk;
                        out[o++] = count(x);
                        out[o++] = self(x);
                    }
                }
                k = j;
                return out;
            }
            long[] total = a.total;
            int nt = a.tmCount.length;
            long[] out = new long[(first ? 5 : 0) + 1 + total.length + 3 + 1 + 2 * nt];
            k = g + 1;
            int o = 0;
            if (first) {
                out[o++] = ne;
                o += 4;
            }
            out[o++] = total.length;
            for (int x = 0; x < total.length; x++) {
                out[o++] = total[x];
            }
            out[o++] = a.mismatches;
            out[o++] = a.misses;
            out[o++] = a.slowEnters;
            out[o++] = nt;
            for (int x = 0; x < nt; x++) {
                out[o++] = a.tmCount[x];
                out[o++] = a.tmTotal[x];
            }
            return out;
        }

        /** All chunks in one array (offline data files, the self-test). */
        long[] all() {
            long[][] parts = new long[8][];
            int np = 0;
            int len = 0;
            for (long[] c = next(); c != null; c = next()) {
                if (np == parts.length) {
                    long[][] b = new long[np * 2][];
                    System.arraycopy(parts, 0, b, 0, np);
                    parts = b;
                }
                parts[np++] = c;
                len += c.length;
            }
            long[] out = new long[len];
            int o = 0;
            for (int i = 0; i < np; i++) {
                System.arraycopy(parts[i], 0, out, o, parts[i].length);
                o += parts[i].length;
            }
            return out;
        }
    }

    /**
     * A thread's state: its shadow stack, its direct-mapped cache (which holds most of its
     * counts) and a short queue of counts on their way to its sink. Only its own thread writes
     * it (the sampler and the dump read it). Small, and sized by what the thread runs, not by
     * the call paths: those are in the shared tree. Reused for a later thread once its thread
     * ended (see {@link Probes#pool}).
     */
    static final class T {
        Thread thread;
        int hash;
        long serial;
        String name;
        /** Index in Probes.live (vlive if virt) while the thread is live. */
        int slot = -1;
        /** A virtual thread (kept in Probes.vlive, not sampled). */
        boolean virt;
        /** thread=y: its row in the report, -1 = "other threads". */
        int row = -1;
        /** Where its counts go: the shared aggregate, or its row (thread=y). */
        A sink;

        // shadow stack pointer (index into fr); fr[0..2) is the root frame. fr[sp - 1] is the
        // context node (call path of the top depth-1 frames) of the top frame's callees (not
        // kept in a field of its own as well: one store less in every enter and exit)
        int sp = 2;
        // the pure leaf running now (its node), 0 = none; read by the sampler
        int leaf;

        /**
         * clock=cpu: this thread's clock is the OS thread's CPU time minus cpuOff, and stands
         * at cpuAt while cpuHeld (a virtual thread not mounted, a carrier running one; see
         * Probes.mounted).
         */
        long cpuOff;
        long cpuAt;
        boolean cpuHeld;

        /** This thread's clock now (timed clocks; see {@link #cpuOff}). */
        long ownClock() {
            if (clock == 1) {
                return System.nanoTime();
            }
            return cpuNanos() - cpuOff;
        }

        /**
         * clock=sample (platform threads; under the class lock): its CPU time when it was last
         * charged (its registration, a sample), -1 = not known yet; and what its last sample
         * charged: the node (self) and the methods (total) in sIds[0..sN).
         */
        long sCpu = -1;
        int sNode;
        int[] sIds = NO_INTS;
        int sN;

        /** Exits that matched no frame (and frames that lost their exit). */
        long mismatches;
        /**
         * The thread ran before recording started (e.g. Reference Handler, Common-Cleaner):
         * its methods entered then (blocked in a wait) exit later with no frame on the shadow
         * stack. Such exits are expected, not counted as mismatches. Also a thread that
         * attached through JNI: its probes before its constructor finished recorded nothing.
         */
        boolean early;
        /** Fallback build: the tracing runtime paused this thread's recording (see pause). */
        boolean paused;
        /** Entries that missed the callee cache of their context (statistics). */
        long misses;
        /** Entries that took the out-of-line path (statistics). */
        long slowEnters;
        // the rules' timer probe, per method: count, total ns
        long[] tmCount = NO_LONGS;
        long[] tmTotal = NO_LONGS;

        void timer(int id, long ns) {
            if (id >= tmCount.length) {
                int n = tmCount.length < 64 ? 64 : tmCount.length;
                while (n <= id) {
                    n *= 2;
                }
                tmCount = copy(tmCount, n);
                tmTotal = copy(tmTotal, n);
                grew();
            }
            tmCount[id]++;
            tmTotal[id] += ns < 0 ? 0 : ns;
        }

        /**
         * {@code gone}: the state of every ended thread (Probes.GONE): an empty stack of
         * capacity 0 and a 1-entry cache that never hits, so that every fast path goes to the
         * slow path, which records nothing for it.
         */
        T(Thread thread, long serial, String name, boolean gone) {
            this.thread = thread;
            this.hash = System.identityHashCode(thread);
            this.serial = serial;
            this.name = name;
            if (gone) {
                fr = new long[2];
            }
            fr[0] = -1L << 32; // root: no method, node 0
        }

        /**
         * Makes an ended thread's state (its data folded, see {@link Probes#ended}) new for
         * another thread: empty stack, queue and statistics; its arrays kept, and its cache
         * entries too, with their counts zeroed (an entry maps a call path to its node of the
         * shared tree, the same for every thread): a thread that runs what the one before it
         * ran (a pool's worker, the next virtual thread of a kind) starts with a warm cache
         * instead of missing it, and moving counts to the sink, for its first hundred calls.
         */
        void reset() {
            unborrow();
            thread = null;
            slot = -1;
            row = -1;
            sink = null;
            sp = 2;
            leaf = 0;
            paused = false;
            cpuOff = 0;
            cpuAt = 0;
            cpuHeld = false;
            sCpu = -1;
            sNode = 0;
            sN = 0;
            mismatches = 0;
            early = false;
            misses = 0;
            slowEnters = 0;
            dmGrown = 0;
            dmUses = 0;
            nq = 0;
            drains = 0;
            tmCount = NO_LONGS;
            tmTotal = NO_LONGS;
            mdKey = NO_INTS;
            md = NO_LONGS;
            mdUsed = 0;
            fr[1] = 0;
            fr[0] = -1L << 32;
            long[] c = dm;
            for (int k = 0; c != NO_DM && k < c.length; k += 4) {
                c[k + 2] = 0;
            }
        }

        // Shadow stack, 2 longs per frame: [id << 32 | node, ctx for callees]. fr[0..2) is the
        // root frame. (8 longs a frame, then 4 with the timed clocks' two, until a live virtual
        // thread's stack had to stay small: tens of thousands of them are parked at once.
        // 10 frames, not 16: a virtual thread parked in LockSupport.park is 8-9 frames deep,
        // JDK frames included.)
        long[] fr = new long[2 * 10];
        // Timed clocks only: each frame's [start time, time in callees], at its index in fr
        // (as long as fr once a timed probe ran; empty with clock=sample).
        long[] ft = NO_LONGS;
        // Direct-mapped cache, 4 longs per entry: [key = ctx << 32 | id, the node's context
        // for callees << 32 | node, calls counted here and not yet moved to the sink, -], read
        // by the inlined fast paths of enter and leafEnter: a hit touches one cache line. An
        // entry's count moves to the queue when the entry is replaced. Starts small (threads
        // that make few calls stay small) and doubles, up to DM_MAX entries and twice the
        // nodes of the shared tree, while entries keep missing it. Only the owner thread
        // writes it; the dump and the fold read it.
        long[] dm = NO_DM;
        /**
         * The cache of a state that has none yet (allocated at its first slow lookup; a
         * virtual thread running on a carrier never needs one): one entry that never hits
         * and is never written.
         */
        static final long[] NO_DM = {-1L, 0, 0, 0};
        /** Empty arrays shared by all states (thread memory: thousands of parked virtual threads). */
        static final long[] NO_LONGS = new long[0];
        static final int[] NO_INTS = new int[0];
        /** Most entries the direct-mapped cache grows to. */
        static final int DM_MAX = 1 << 16;
        // Counts on their way to the sink, pairs (kind << 32 | node, value): kind 0 = calls
        // (a replaced cache entry's), 1 = self time (timed clocks). Moved to the sink under
        // the class lock when full (drain), growing up to Q_MAX longs for busy threads.
        long[] q = NO_LONGS;
        int nq;
        int drains;
        static final int Q_MAX = 1024;
        // timed clocks, per method the thread ran (open addressing on the method id; slot i:
        // mdKey[i] = id + 1, 0 = empty): md[2i] = its frames on the stack, md[2i + 1] = total
        // time of its outermost frames. Sized by the methods used, not by the largest id.
        int[] mdKey = NO_INTS; // (allocated on first use: timed clocks only)
        long[] md = NO_LONGS;
        int mdUsed;
        /** Lookups of the slow path in {@link #dm} (counted on the cache's owner). */
        long dmUses;
        /** dmUses when the direct-mapped cache last grew. */
        long dmGrown;
        /**
         * A virtual thread running on a carrier: the carrier's state, whose cache {@link #dm}
         * is now (see {@link Probes#mounted}); null: dm is its own. Only this thread and its
         * carrier (the same OS thread, one at a time) write the cache; its counts belong to
         * the carrier's state (folded and dumped with it, never with this one).
         */
        T lender;
        /** While {@link #lender} is set: this state's own cache (its counts from before). */
        long[] own;

        /** Runs with carrier state {@code c}'s cache ({@code null}: its own). */
        void borrow(T c) {
            if (c == null || c == this || c.virt || c.lender != null) {
                unborrow();
                return;
            }
            if (lender == null) {
                own = dm;
            }
            lender = c;
            dm = c.dm;
        }

        /** Back to its own cache. */
        void unborrow() {
            if (lender != null) {
                dm = own;
                own = null;
                lender = null;
            }
        }

        /** Its own cache (not a borrowed one). */
        long[] ownDm() {
            long[] o = own;
            return lender != null && o != null ? o : dm;
        }

        // SOE: a recursion to StackOverflowError throws it inside the slow paths too (with the
        // timed clocks every probe takes them; the catch-all's unwindT at the deepest frames).
        // Counts must survive it at any call: enter makes its calls first and then the
        // stores that count the call and push the frame, with no call between them (thrown
        // before: nothing counted, the method body does not run either); pop queues a frame's
        // self time and then ends it with stores, the last one sp (thrown before: the frame is
        // left whole for the next exit, never charged twice); drain, which empties the queue
        // before the sink takes it (see drainLocked) and rehashes the sink's map, first uses
        // more stack than it needs (headroom), so the error comes before it changes anything
        // (a count stays in its cache entry, a pair not queued). Before, the error thrown while
        // the sink took a drained queue lost the queue (3 recursions to StackOverflowError on a
        // 1 MB stack: 7,684 calls lost every time), and self time was charged twice.
        // @ReservedStackAccess (JEP 270) on these paths kept counts exact too, but HotSpot
        // prints a warning on the program's stderr at every use of the reserved zone.
        void enter(int id) {
            slowEnters++;
            int b = sp;
            long[] fr = this.fr;
            if (b + 2 > fr.length) {
                fr = growStack();
            }
            // every call first (each leaves the state whole if it throws), then the stores
            // that make the entry, with no call between them (see SOE)
            int h = lookup((int) fr[b - 1], id);
            long[] dm = this.dm;
            long v = dm[h + 1];
            int j = 0;
            long[] ft = this.ft;
            long now = 0;
            if (timed) {
                j = mdSlot(id);
                if (ft.length != fr.length) {
                    ft = copy(ft, fr.length);
                    this.ft = ft;
                    grew();
                }
                now = ownClock();
            }
            dm[h + 2]++;
            fr[b] = ((long) id << 32) | (v & 0xFFFFFFFFL);
            fr[b + 1] = (int) (v >>> 32);
            if (timed) {
                md[j]++; // (md may grow in mdSlot: read after it)
                ft[b + 1] = 0;
                ft[b] = now;
            }
            sp = b + 2;
        }

        /**
         * After an array grew: a state now above the allowance changes {@link Probes#grown},
         * and the budget is checked (the live states counted, under the class lock): at every
         * growth of a state above a 64th of the budget (a few doublings a thread), else once
         * every (live threads / 8 + 64) such growths, amortized like the registrations' count.
         */
        void grew() {
            long b = bytes();
            if (b > ALLOWANCE) {
                grown++;
                if (budget > 0 && on && (b > budget >> 6 || ++growths > (nLive >> 3) + 64)) {
                    growths = 0;
                    checkLive();
                }
            }
        }

        /** {@link #bytes} of a new state. */
        static final long FRESH_BYTES = 160 + 8L * (2 * 10 + 4 * 4);

        /** About the bytes it takes (arrays read racily; an estimate). */
        long bytes() {
            return 160 + 8L * (fr.length + ft.length + ownDm().length + q.length + md.length)
                    + 4L * mdKey.length;
        }

        /** A pure leaf's entry, off the fast path (see {@link Probes#leafEnter}). */
        void leafEnter(int id) {
            slowEnters++;
            leaf = (int) cached((int) fr[sp - 1], id);
        }

        /**
         * Counts a call of method {@code id} in context {@code ctx} and returns its node with
         * the node's context for callees ({@code ctx << 32 | node}): the entry of the
         * direct-mapped cache of the fast paths, (re)filled from the shared tree.
         */
        private long cached(int ctx, int id) {
            int h = lookup(ctx, id);
            long[] dm = this.dm;
            dm[h + 2]++;
            return dm[h + 1];
        }

        /**
         * The index in {@link #dm} of the entry of ({@code ctx}, {@code id}), (re)filled from
         * the shared tree (its count not incremented).
         */
        private int lookup(int ctx, int id) {
            // grows while entries keep missing: after 16 slow entries per entry it has (the
            // lookups of every thread that uses it: its owner's count)
            if (dm == NO_DM) {
                long[] k = new long[4 * 4];
                for (int i = 0; i < k.length; i += 4) {
                    k[i] = -1L;
                }
                dm = k;
                if (lender != null) {
                    lender.dm = k;
                }
            }
            T o = lender != null ? lender : this;
            long u = ++o.dmUses;
            if (u - o.dmGrown > 4L * dm.length && dm.length < 4 * DM_MAX
                    && dm.length < 8L * gNodes) {
                o.dmGrown = u;
                growDm();
                o.grew();
            }
            long[] dm = this.dm;
            int h = slot(dm, ctx, id);
            long key = ((long) ctx << 32) | id;
            if (dm[h] != key) {
                misses++;
                long v = node(ctx, id);
                flush(dm, h);
                dm[h] = key;
                dm[h + 1] = v;
            }
            return h;
        }

        /** Moves the count of cache entry {@code h} to the queue. */
        private void flush(long[] dm, int h) {
            long c = dm[h + 2];
            if (dm[h] != -1L && c != 0) {
                put((int) dm[h + 1], c);
            }
            dm[h + 2] = 0;
        }

        /**
         * Queues {@code v} for {@code kn} (kind << 32 | node); drains a full queue. A thread's
         * queue is allocated only if it needs it. (Queueing a virtual thread's counts in its
         * carrier's queue without a lock was tried and removed: a CI run lost counts with it.)
         */
        void put(long kn, long v) {
            if (nq + 2 > q.length) {
                if (q.length == 0) {
                    q = new long[8];
                } else {
                    drain();
                }
            }
            q[nq] = kn;
            q[nq + 1] = v;
            nq += 2;
        }

        /** Moves the queue to the sink (under the class lock). */
        void drain() {
            // SOE: a StackOverflowError here, before anything changed, not in the middle
            headroom(HEADROOM);
            if (jniLock && lock0()) {
                try {
                    drainLocked();
                } finally {
                    unlock0();
                }
                return;
            }
            synchronized (Probes.class) {
                drainLocked();
            }
        }

        /**
         * Frames of {@link #headroom} that drain() makes first: more stack than draining takes
         * (the lock, the sink's map growing, the budget checked: ~15 frames).
         */
        static final int HEADROOM = 64;

        /** Uses {@code n} frames of stack and returns (see SOE). */
        @DontInline
        static int headroom(int n) {
            return n <= 0 ? 0 : headroom(n - 1) + 1;
        }

        private void drainLocked() {
            drainsLocked++;
            A a = sink;
            // emptied first: if recording stops while the queue is added (the budget, as a
            // sink grows), the live threads' counts folded then do not hold it a second time
            int n = nq;
            nq = 0;
            if (a != null && failure == null) {
                a.addQueue(q, n);
            }
            // a thread that keeps draining gets a longer queue (fewer locks)
            if ((++drains & 31) == 0 && q.length < Q_MAX) {
                q = new long[q.length * 2];
                grew();
            }
        }

        void exit(int id) {
            int b = sp;
            if (b <= 2) {
                if (!early) {
                    mismatches++;
                }
                return;
            }
            long[] fr = this.fr;
            long f = fr[b - 2];
            if (!timed && (int) (f >>> 32) == id) {
                sp = b - 2;
                return;
            }
            long t = timed ? ownClock() : 0;
            if ((int) (f >>> 32) != id) {
                int k = b - 4;
                while (k >= 2 && (int) (fr[k] >>> 32) != id) {
                    k -= 2;
                }
                if (k < 2) {
                    if (!early) {
                        mismatches++;
                    }
                    return;
                }
                // frames above k lost their exit (e.g. an error inside a probe): end them now
                while (b - 2 > k) {
                    b = pop(b, t);
                    mismatches++;
                }
            }
            pop(b, t);
        }

        /** Pops the frames above {@code t} (a token of enterT), timing them. */
        void exitTo(int t) {
            int b = sp;
            if (b <= t) {
                return;
            }
            long now = timed ? ownClock() : 0;
            while (b - 2 > t) {
                // frames above the token's lost their exit (e.g. an error inside a probe)
                b = pop(b, now);
                mismatches++;
            }
            pop(b, now);
        }

        /**
         * Pops the top frame (at {@code b - 2}, {@link #sp} == b), timing it up to {@code t};
         * returns the new {@link #sp}. Its calls come first and its stores after them, the
         * last one {@code sp}: a StackOverflowError leaves the frame on the stack, unchanged
         * and charged nothing, for the next exit to pop (see SOE).
         */
        private int pop(int b, long t) {
            b -= 2;
            long[] fr = this.fr;
            long f = fr[b];
            int node = (int) f;
            long[] ft = this.ft;
            if (!timed || b + 1 >= ft.length) {
                sp = b;
                return b;
            }
            long el = t - ft[b];
            if (el < 0) {
                el = 0;
            }
            long self = el - ft[b + 1];
            int j = mdSlot((int) (f >>> 32));
            if (self > 0) {
                put((1L << 32) | node, self);
            }
            if (b > 0) {
                ft[b - 1] += el;
            }
            long[] md = this.md;
            if (--md[j] == 0) {
                md[j + 1] += el;
            }
            sp = b;
            return b;
        }

        static int mix(long key) {
            long h = key * 0x9E3779B97F4A7C15L;
            return (int) (h ^ (h >>> 29));
        }

        private long[] growStack() {
            // by a quarter (whole frames): a parked virtual thread's stack is a little deeper
            // than the first size, and thousands of them are live at once
            int n = fr.length + (fr.length >> 3 << 1);
            fr = copy(fr, n < fr.length + 2 ? fr.length + 2 : n);
            grew();
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
            if (lender != null) {
                lender.dm = k; // the carrier's cache, grown
            }
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
                grew();
            }
        }

        /**
         * The sampler (under the class lock): {@code ns} of CPU time to the thread's current
         * call path in its sink (self) and once to each method on its shadow stack (total).
         */
        boolean sample(long ns, int ep) {
            A a = sink;
            if (a == null) {
                return false;
            }
            // read racily while the owner runs: each value once, then checked
            int g = gNodes;
            int lf = leaf;
            int b = sp;
            long[] fr = this.fr;
            if (b > fr.length) {
                b = fr.length;
            }
            b &= ~1;
            int node;
            int topId;
            int k = b - 2; // the first shadow frame charged with total time
            if (lf > 0) {
                // a pure leaf is running on top of the shadow stack
                long kk = gkey(lf);
                if (lf >= g || kk == 0) {
                    return false;
                }
                node = lf;
                topId = (int) ~kk;
            } else {
                if (b <= 2) {
                    return false;
                }
                // the top frame is read once: its node (self) and method (total) must agree
                // even if the owner pushes and pops while we look
                long top = fr[b - 2];
                node = (int) top;
                topId = (int) (top >>> 32);
                k = b - 4;
            }
            if (node <= 0 || node >= g || topId < 0) {
                return false;
            }
            a.add(node, 0, ns);
            charge(topId, ns, ep);
            // kept for lastSample: what it charged (the frames below the top, each method once
            // per sample by charge's mark)
            int[] ids = sIds;
            int need = 1 + (k >= 2 ? (k >> 1) : 0);
            if (ids.length < need) {
                ids = new int[need < 8 ? 8 : need + (need >> 1)];
                sIds = ids;
            }
            int n = 0;
            ids[n++] = topId;
            for (; k >= 2; k -= 2) {
                int id = (int) (fr[k] >>> 32);
                if (id >= 0) {
                    charge(id, ns, ep);
                    ids[n++] = id;
                }
            }
            sNode = node;
            sN = n;
            return true;
        }

        /**
         * clock=sample, under the class lock: a last sample of this platform thread, whose CPU
         * time is {@code cpu} now (-1: unknown), when it ends or at VM death. The CPU time
         * since it was last charged goes where the sampler would put it: its current call
         * path, or, if its stack is empty (a thread ends after its run() returned; the main
         * thread at VM death after main() returned), what its last sample charged. A thread
         * never sampled (it lived less than an interval between two samples) with an empty
         * stack has nowhere to go: not charged.
         */
        void lastSample(long cpu) {
            if (cpu < 0 || sCpu < 0 || cpu <= sCpu) {
                return;
            }
            long ns = cpu - sCpu;
            sCpu = cpu;
            int mk = ++mark;
            if (sample(ns, mk)) {
                return;
            }
            A a = sink;
            int node = sNode;
            if (a == null || node <= 0 || node >= gNodes) {
                return;
            }
            a.add(node, 0, ns);
            int[] ids = sIds;
            int n = sN < ids.length ? sN : ids.length;
            for (int i = 0; i < n; i++) {
                charge(ids[i], ns, mk);
            }
        }

        static int[] copy(int[] a, int n) {
            int[] b = new int[n];
            System.arraycopy(a, 0, b, 0, a.length < n ? a.length : n);
            return b;
        }

        static long[] copy(long[] a, int n) {
            long[] b = new long[n];
            System.arraycopy(a, 0, b, 0, a.length < n ? a.length : n);
            return b;
        }
    }
}

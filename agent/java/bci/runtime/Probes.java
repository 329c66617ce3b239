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
    /** Every thread state ever registered, in registration order (index = serial). */
    static T[] all = new T[64];
    static int nall;
    /** The thread currently inside registration: its probe calls are ignored. */
    static Thread registering;

    static native long cpuNanos();

    static long clockNow() {
        if (clock == 1) {
            return System.nanoTime();
        }
        return cpuNanos();
    }

    static int epoch;

    /**
     * Called by the agent's sampler thread every interval with, per registered thread (index =
     * serial), the CPU time it used since the previous call: charged to the thread's current
     * call path (self) and once to every method on its shadow stack (total). Reads other
     * threads' stacks racily; writes only sampler-owned arrays.
     */
    public static void sample(long[] ns) {
        T[] a = all;
        int n = nall;
        if (n > a.length) {
            n = a.length;
        }
        if (n > ns.length) {
            n = ns.length;
        }
        int ep = ++epoch;
        for (int i = 0; i < n; i++) {
            T s = a[i];
            if (s != null && ns[i] > 0) {
                s.sample(ns[i], ep);
            }
        }
    }

    /** The thread of serial {@code i} (for the sampler). */
    public static Thread thread(int i) {
        synchronized (Probes.class) {
            return i >= 0 && i < nall ? all[i].thread : null;
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
                    s.ctx = c;
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
            s.ctx = (int) fr[k - 7];
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
            int ctx = s.ctx;
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
            s.leafEnter(id);
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
            s.timer(id, ns);
        }
    }

    @DontInline
    static void enter0(int id) {
        if (!on) {
            return;
        }
        T s = self();
        if (s != null) {
            s.enter(id);
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
    // @thread-lookup fallback end

    /* @thread-lookup field begin
    // The current thread's state if at hand (the fast path), else null: a field the agent
    // adds to java.lang.Thread (no shared "last thread" to compare and write).
    static T cur() {
        return Thread.currentThread().bci$t;
    }

    // The current thread's state, registered on first use; null while registering.
    static T self() {
        Thread t = Thread.currentThread();
        T s = t.bci$t;
        return s != null ? s : register(t, System.identityHashCode(t));
    }

    static void publish(T s) {
        s.thread.bci$t = s;
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
            registering = t;
            try {
                String name = null;
                try {
                    name = t.getName();
                } catch (Throwable e) {
                    name = null;
                }
                s = new T(t, nall, name, depth);
                s.early = startedEarly(t);
                if (nall == all.length) {
                    T[] n = new T[all.length * 2];
                    System.arraycopy(all, 0, n, 0, nall);
                    all = n;
                }
                all[nall++] = s;
                publish(s);
                return s;
            } catch (Throwable e) {
                return null;
            } finally {
                registering = null;
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
        T t = new T(Thread.currentThread(), -1, "self-test", depth);
        t.enter(0);
        t.leafEnter(1);
        t.exit(0);
        t.timer(0, 1);
        t.sample(1, 1);
        t.export();
        if (timed) {
            clockNow();
        }
        fast = !timed;
        on = true;
    }

    /** Stops recording (called by the agent before it reads the data at VM death). */
    public static void stop() {
        fast = false;
        on = false;
    }

    public static int threadCount() {
        synchronized (Probes.class) {
            return nall;
        }
    }

    public static String threadName(int i) {
        T s;
        synchronized (Probes.class) {
            if (i < 0 || i >= nall) {
                return null;
            }
            s = all[i];
        }
        return s.name;
    }

    /**
     * One thread's data, flattened: {@code [nodes, (prefix, method, count, self)*, methods,
     * (total)*, mismatches]}. Node 0 is the root and is not exported; node {@code k >= 1} is the
     * call path of its prefix node followed by its method. Read racily while the thread may run:
     * a snapshot, each value whole.
     */
    public static long[] export(int i) {
        T s;
        synchronized (Probes.class) {
            if (i < 0 || i >= nall) {
                return null;
            }
            s = all[i];
        }
        return s.export();
    }

    /** A thread's state. Only its own thread writes it. */
    static final class T {
        final Thread thread;
        final int hash;
        final int serial;
        final String name;
        final int depth;

        // shadow stack pointer (index into fr); fr[0..8) is the root frame
        int sp = 8;
        // the context node (call path of the top depth-1 frames) of the top frame's callees:
        // always fr[sp - 7], kept here too for leafEnter, which reads nothing else of the stack
        int ctx;
        // the pure leaf running now (its node), 0 = none; read by the sampler
        int leaf;

        // call-path nodes; node 0 is the root (empty path)
        int nNodes = 1;
        int[] nPrefix = new int[256];
        int[] nId = new int[256];
        int[] nLen = new int[256];

        // (ctx, id) -> node
        long[] hKey = new long[512];
        int[] hVal = new int[512];
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

        T(Thread thread, int serial, String name, int depth) {
            this.thread = thread;
            this.hash = System.identityHashCode(thread);
            this.serial = serial;
            this.name = name;
            this.depth = depth < 1 ? 1 : depth;
            for (int k = 0; k < 8; k++) {
                nCache[k] = -1L;
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
        long[] fr = new long[8 * 64];
        // Direct-mapped cache, 4 longs per entry: [key = ctx << 32 | id, the node's context
        // for callees << 32 | node, calls counted here and not yet in nCount, -], read by the
        // inlined fast paths of enter and leafEnter: a hit touches one cache line (no random
        // access into nCount, which has one slot per call path). An entry's count moves to
        // nCount when the entry is replaced. Starts small (threads that make few calls stay
        // small) and doubles, up to DM_MAX entries, while entries keep missing it. Only the
        // owner thread writes it; export reads it.
        long[] dm = new long[4 * 256];
        /** Most entries the direct-mapped cache grows to. */
        static final int DM_MAX = 1 << 16;
        // per node
        long[] nCount = new long[256];
        long[] nSelf = new long[256];
        int[] nCtx = new int[256];
        // per context node: the 8 callees seen most recently (id << 32 | node, -1 = empty)
        long[] nCache = new long[8 * 256];
        // per method: stride 2 in md: [frames on stack, total of outermost frames]
        long[] md = new long[2 * 256];
        // sampler-owned: time per node, total per method, epoch mark per method
        long[] sSelf = new long[256];
        long[] sTotal = new long[256];
        int[] sMark = new int[256];

        void enter(int id) {
            slowEnters++;
            int b = sp;
            long[] fr = this.fr;
            if (b + 8 > fr.length) {
                fr = growStack();
            }
            int node = cached((int) fr[b - 7], id);
            fr[b] = ((long) id << 32) | node;
            fr[b + 1] = ctx = nCtx[node];
            if (timed) {
                long[] md = this.md;
                int mi = 2 * id;
                if (mi + 1 >= md.length) {
                    md = growMethods(id);
                }
                md[mi]++;
                fr[b + 4] = 0;
                fr[b + 3] = clockNow();
            }
            sp = b + 8;
        }

        /** A pure leaf's entry, off the fast path (see {@link Probes#leafEnter}). */
        void leafEnter(int id) {
            slowEnters++;
            leaf = cached(ctx, id);
        }

        /**
         * Counts a call of method {@code id} in context {@code ctx} and returns its node: the
         * entry of the direct-mapped cache of the fast paths, (re)filled from {@link #lookup}.
         */
        private int cached(int ctx, int id) {
            if ((slowEnters & 0xFFFF) == 0 && dm.length < 4 * DM_MAX) {
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
            long[] c = nCache;
            int e = 8 * ctx;
            for (int k = e; k < e + 8; k++) {
                long v = c[k];
                if ((int) (v >>> 32) == id) {
                    return (int) v;
                }
                if (v == -1L) {
                    break;
                }
            }
            misses++;
            int node = child(ctx, id);
            c = nCache;
            // most recent first: shift the others down, the oldest falls out
            System.arraycopy(c, e, c, e + 1, 7);
            c[e] = ((long) id << 32) | node;
            return node;
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
                ctx = (int) fr[b - 15];
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
            ctx = (int) fr[b - 7];
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
            int id = (int) (f >>> 32);
            long[] md = this.md;
            if (--md[2 * id] == 0) {
                md[2 * id + 1] += el;
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
            for (int k = 8 * node; k < 8 * node + 8; k++) {
                nCache[k] = -1L;
            }
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

        private static int mix(long key) {
            long h = key * 0x9E3779B97F4A7C15L;
            return (int) (h ^ (h >>> 29));
        }

        private void put(long key, int val) {
            if ((hUsed + 1) * 2 > hKey.length) {
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
            nSelf = copy(nSelf, n);
            nCache = copy(nCache, 8 * n);
            nPrefix = copy(nPrefix, n);
        }

        private long[] growMethods(int id) {
            int n = md.length;
            while (n <= 2 * id + 1) {
                n *= 2;
            }
            md = copy(md, n);
            return md;
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
                int n = sSelf.length;
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

        /** Adds a sample to method {@code id}'s total, once per sample (recursion). */
        private void charge(int id, long ns, int ep) {
            if (id >= sMark.length) {
                int n = sMark.length;
                while (n <= id) {
                    n *= 2;
                }
                sMark = copy(sMark, n);
                sTotal = copy(sTotal, n);
            }
            if (sMark[id] != ep) {
                sMark[id] = ep;
                sTotal[id] += ns;
            }
        }

        private static int min(int a, int b) {
            return a < b ? a : b;
        }

        private static int[] copy(int[] a, int n) {
            int[] b = new int[n];
            System.arraycopy(a, 0, b, 0, a.length);
            return b;
        }

        private static long[] copy(long[] a, int n) {
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
            long[] ss = sSelf;
            long[] st = sTotal;
            boolean tm = timed;
            int n = nNodes;
            n = min(min(n, prefix.length), min(ids.length, min(cnt.length, slf.length)));
            int nm = tm ? md.length / 2 : st.length;
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
            for (int k = 0; k < nm; k++) {
                out[o++] = tm ? md[2 * k + 1] : st[k];
            }
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

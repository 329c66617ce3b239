package bci.runtime;

/**
 * The runtime that instrumented methods call: {@code enter(id)} at entry, {@code exit(id)} before
 * every return and {@code unwind(id)} in the catch-all handler before the re-throw.
 *
 * <p>The agent defines this class (and {@link T}) in the boot loader at VMInit and sets its static
 * fields through JNI. Everything reachable from the probes uses only this class, arrays,
 * {@code System.arraycopy}, {@code Thread.currentThread}, {@code System.identityHashCode} and
 * {@code System.nanoTime}: native methods, which are never instrumented. A JDK method with
 * bytecode called from a probe would call a probe again; the only place that does (thread
 * registration: {@code new T}, {@code Thread.getName}) marks the thread as {@link #registering}
 * and every probe call it makes returns at once.
 *
 * <p>All recording is per thread, without locks or atomics: a thread finds its own {@link T}
 * through an open-addressed table keyed by identity hash. Only the first probe of a thread takes
 * the class lock (to register). Counts are exact; times come from the clock chosen with
 * {@code clock=}.
 */
public final class Probes {
    private Probes() {}

    /** Probes record only while this is true (set by the agent at VMInit, cleared at dump). */
    static volatile boolean on;
    /** 0 = tick (coarse monotonic wall clock written by an agent thread), 1 = System.nanoTime, 2 = thread CPU time. */
    static int clock;
    /** Number of frames in a call path (HPROF depth). */
    static int depth = 4;
    /** The coarse monotonic clock in ns, written every tick interval by the agent's thread. */
    static volatile long tick;

    /** Thread table, open addressing on identityHashCode(thread); only grows, under the class lock. */
    static volatile T[] table = new T[256];
    static int tableUsed;
    /** Every thread state ever registered, in registration order (index = serial). */
    static T[] all = new T[64];
    static int nall;
    /** The thread currently inside registration: its probe calls are ignored. */
    static Thread registering;

    static native long cpuNanos();

    static long now() {
        int c = clock;
        if (c == 0) {
            return tick;
        } else if (c == 1) {
            return System.nanoTime();
        } else {
            return cpuNanos();
        }
    }

    public static void enter(int id) {
        if (!on) {
            return;
        }
        T s = self();
        if (s != null) {
            s.enter(id);
        }
    }

    public static void exit(int id) {
        if (!on) {
            return;
        }
        T s = self();
        if (s != null) {
            s.exit(id);
        }
    }

    public static void unwind(int id) {
        if (!on) {
            return;
        }
        T s = self();
        if (s != null) {
            s.exit(id);
        }
    }

    static T self() {
        Thread t = Thread.currentThread();
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
                return s;
            }
            i = (i + 1) & m;
        }
    }

    static T register(Thread t, int h) {
        if (t == null || registering == t) {
            return null;
        }
        synchronized (Probes.class) {
            T[] tab = table;
            int m = tab.length - 1;
            int i = h & m;
            for (;;) {
                T s = tab[i];
                if (s == null) {
                    break;
                }
                if (s.thread == t) {
                    return s;
                }
                i = (i + 1) & m;
            }
            registering = t;
            try {
                String name = null;
                try {
                    name = t.getName();
                } catch (Throwable e) {
                    name = null;
                }
                T s = new T(t, nall, name, depth);
                if (nall == all.length) {
                    T[] n = new T[all.length * 2];
                    System.arraycopy(all, 0, n, 0, nall);
                    all = n;
                }
                all[nall++] = s;
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
                i = h & m;
                while (tab[i] != null) {
                    i = (i + 1) & m;
                }
                tab[i] = s;
                tableUsed++;
                table = tab;
                return s;
            } catch (Throwable e) {
                return null;
            } finally {
                registering = null;
            }
        }
    }

    /** Stops recording (called by the agent before it reads the data at VM death). */
    public static void stop() {
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

        // shadow stack
        int sp;
        int[] sId = new int[64];
        int[] sNode = new int[64];
        long[] sStart = new long[64];
        long[] sChild = new long[64];

        // call-path nodes; node 0 is the root (empty path)
        int nNodes = 1;
        int[] nPrefix = new int[256];
        int[] nId = new int[256];
        int[] nLen = new int[256];
        int[] nCtx = new int[256];
        int[] nCacheId = new int[256];
        int[] nCacheNode = new int[256];
        long[] nCount = new long[256];
        long[] nSelf = new long[256];

        // (ctx, id) -> node
        long[] hKey = new long[512];
        int[] hVal = new int[512];
        int hUsed;

        // per method: frames of it on the stack, inclusive time of outermost frames
        int[] mActive = new int[256];
        long[] mTotal = new long[256];

        long mismatches;

        T(Thread thread, int serial, String name, int depth) {
            this.thread = thread;
            this.hash = System.identityHashCode(thread);
            this.serial = serial;
            this.name = name;
            this.depth = depth < 1 ? 1 : depth;
            nCacheId[0] = -1;
            for (int k = 0; k < hKey.length; k++) {
                hKey[k] = -1L;
            }
        }

        void enter(int id) {
            int sp = this.sp;
            if (sp == sId.length) {
                growStack();
            }
            int ctx = sp == 0 ? 0 : nCtx[sNode[sp - 1]];
            int node;
            if (nCacheId[ctx] == id) {
                node = nCacheNode[ctx];
            } else {
                node = child(ctx, id);
                nCacheId[ctx] = id;
                nCacheNode[ctx] = node;
            }
            if (id >= mActive.length) {
                growMethods(id);
            }
            mActive[id]++;
            sId[sp] = id;
            sNode[sp] = node;
            sChild[sp] = 0;
            sStart[sp] = now();
            this.sp = sp + 1;
        }

        void exit(int id) {
            long t = now();
            int sp = this.sp;
            if (sp == 0) {
                mismatches++;
                return;
            }
            if (sId[sp - 1] != id) {
                int k = sp - 2;
                while (k >= 0 && sId[k] != id) {
                    k--;
                }
                if (k < 0) {
                    mismatches++;
                    return;
                }
                // frames above k lost their exit (e.g. an error inside a probe): end them now
                while (sp - 1 > k) {
                    mismatches++;
                    sp = pop(sp, t);
                }
            }
            this.sp = pop(sp, t);
        }

        private int pop(int sp, long t) {
            sp--;
            long el = t - sStart[sp];
            if (el < 0) {
                el = 0;
            }
            long self = el - sChild[sp];
            if (self < 0) {
                self = 0;
            }
            int node = sNode[sp];
            nCount[node]++;
            nSelf[node] += self;
            if (sp > 0) {
                sChild[sp - 1] += el;
            }
            int id = sId[sp];
            if (--mActive[id] == 0) {
                mTotal[id] += el;
            }
            return sp;
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
            nCacheId[node] = -1;
            // insert before computing nCtx: drop() may add nodes and rehash
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

        private void growStack() {
            int n = sId.length * 2;
            sId = copy(sId, n);
            sNode = copy(sNode, n);
            sStart = copy(sStart, n);
            sChild = copy(sChild, n);
        }

        private void growNodes() {
            int n = nPrefix.length * 2;
            nId = copy(nId, n);
            nLen = copy(nLen, n);
            nCtx = copy(nCtx, n);
            nCacheId = copy(nCacheId, n);
            nCacheNode = copy(nCacheNode, n);
            nCount = copy(nCount, n);
            nSelf = copy(nSelf, n);
            nPrefix = copy(nPrefix, n);
        }

        private void growMethods(int id) {
            int n = mActive.length;
            while (n <= id) {
                n *= 2;
            }
            mTotal = copy(mTotal, n);
            mActive = copy(mActive, n);
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
            long[] count = nCount;
            long[] self = nSelf;
            long[] total = mTotal;
            int n = nNodes;
            n = min(min(n, prefix.length), min(ids.length, min(count.length, self.length)));
            int nm = total.length;
            long[] out = new long[1 + 4 * n + 1 + nm + 1];
            int o = 0;
            out[o++] = n;
            for (int k = 0; k < n; k++) {
                out[o++] = prefix[k];
                out[o++] = ids[k];
                out[o++] = count[k];
                out[o++] = self[k];
            }
            out[o++] = nm;
            for (int k = 0; k < nm; k++) {
                out[o++] = total[k];
            }
            out[o++] = mismatches;
            return out;
        }
    }
}

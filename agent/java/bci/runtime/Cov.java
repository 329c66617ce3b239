package bci.runtime;

import java.io.BufferedWriter;
import java.io.FileWriter;
import java.io.IOException;
import java.util.ArrayList;

/**
 * Coverage counters. Instrumented code asks {@link #arr} once per method call for the calling
 * thread's counter array of its class and bumps counters in it with plain {@code long}
 * increments: every array has one writer, so counts are exact without a lock or an atomic on the
 * path. Arrays of ended threads are folded into a shared sum (exactly: {@code isAlive()} returning
 * false orders the thread's writes before the fold), so memory follows the live threads, not
 * every thread that ever ran. Never instrumented itself.
 *
 * <p>This build finds the thread's arrays through a ThreadLocal (offline-instrumented programs,
 * no agent).
 */
public final class Cov {
    private Cov() {}

    /** One thread's arrays, indexed by class id. */
    static final class Slot {
        final Thread thread;
        long[][] tab = new long[64][];

        Slot(Thread t) {
            thread = t;
        }
    }

    private static final ThreadLocal<Slot> LOCAL = new ThreadLocal<>();
    /** Slots of threads not folded yet. Guarded by the class lock. */
    private static final ArrayList<Slot> SLOTS = new ArrayList<>();
    /** Sums of folded threads, by class id. Guarded by the class lock. */
    private static long[][] folded = new long[64][];
    /** New slots since the last sweep for ended threads. */
    private static int sinceSweep;
    /** Set when an array could not be allocated: counts after that are missing. */
    static volatile boolean lost;
    /** Where an array goes when allocation failed (its counts are lost). */
    private static long[] sink = new long[0];

    /** The calling thread's counters of class {@code cid}, which has {@code n} counters. */
    public static long[] arr(int cid, int n) {
        Slot s = LOCAL.get();
        if (s != null) {
            long[][] t = s.tab;
            if (cid < t.length) {
                long[] a = t[cid];
                if (a != null) {
                    return a;
                }
            }
        }
        return slow(cid, n);
    }

    private static long[] slow(int cid, int n) {
        try {
            Slot s = LOCAL.get();
            if (s == null) {
                s = new Slot(Thread.currentThread());
                synchronized (Cov.class) {
                    SLOTS.add(s);
                    if (++sinceSweep >= 64) {
                        sinceSweep = 0;
                        sweep();
                    }
                }
                LOCAL.set(s);
            }
            long[][] t = s.tab;
            if (cid >= t.length) {
                long[][] g = new long[Math.max(cid + 1, t.length * 2)][];
                System.arraycopy(t, 0, g, 0, t.length);
                // Publish the larger table under the lock: a dump may be reading the old one.
                synchronized (Cov.class) {
                    s.tab = t = g;
                }
            }
            long[] a = new long[n];
            synchronized (Cov.class) {
                t[cid] = a;
            }
            return a;
        } catch (Throwable e) {
            // Out of memory (or worse): this call's counts are lost, the program goes on.
            lost = true;
            long[] a = sink;
            if (a.length < n) {
                try {
                    sink = a = new long[n];
                } catch (Throwable again) {
                    return new long[0];
                }
            }
            return a;
        }
    }

    /** Folds the slots of ended threads into {@link #folded}. Holds the class lock. */
    private static void sweep() {
        int w = 0;
        for (int r = 0; r < SLOTS.size(); r++) {
            Slot s = SLOTS.get(r);
            if (s.thread.isAlive()) {
                SLOTS.set(w++, s);
            } else {
                add(s.tab);
            }
        }
        while (SLOTS.size() > w) {
            SLOTS.remove(SLOTS.size() - 1);
        }
    }

    private static void add(long[][] tab) {
        if (folded.length < tab.length) {
            long[][] g = new long[tab.length][];
            System.arraycopy(folded, 0, g, 0, folded.length);
            folded = g;
        }
        for (int c = 0; c < tab.length; c++) {
            long[] a = tab[c];
            if (a == null) {
                continue;
            }
            long[] f = folded[c];
            if (f == null || f.length < a.length) {
                long[] g = new long[a.length];
                if (f != null) {
                    System.arraycopy(f, 0, g, 0, f.length);
                }
                folded[c] = f = g;
            }
            for (int i = 0; i < a.length; i++) {
                long x = f[i] + a[i];
                f[i] = x < 0 ? Long.MAX_VALUE : x; // saturate
            }
        }
    }

    /**
     * Sums over every thread, by class id (live threads' arrays are read as they are: a dump
     * while they run is a snapshot).
     */
    public static synchronized long[][] snapshot() {
        sweep();
        long[][] keep = folded;
        folded = new long[keep.length][];
        add(keep);
        for (Slot s : SLOTS) {
            add(s.tab);
        }
        long[][] out = folded;
        folded = keep;
        return out;
    }

    /** Writes {@code cid<TAB>count,count,...} lines (the tests' exchange format). */
    public static void dumpText(String path) throws IOException {
        long[][] all = snapshot();
        try (BufferedWriter w = new BufferedWriter(new FileWriter(path))) {
            if (lost) {
                w.write("# lost: an array could not be allocated\n");
            }
            for (int c = 0; c < all.length; c++) {
                if (all[c] == null) {
                    continue;
                }
                StringBuilder b = new StringBuilder().append(c).append('\t');
                for (int i = 0; i < all[c].length; i++) {
                    if (i > 0) {
                        b.append(',');
                    }
                    b.append(all[c][i]);
                }
                w.write(b.append('\n').toString());
            }
        }
    }

    static {
        String out = System.getProperty("bci.cov.dump");
        if (out != null) {
            Runtime.getRuntime()
                    .addShutdownHook(
                            new Thread(
                                    () -> {
                                        try {
                                            dumpText(out);
                                        } catch (IOException e) {
                                            System.err.println("bci: cannot write " + out + ": " + e);
                                        }
                                    },
                                    "bci-coverage-dump"));
        }
    }
}

package bci.runtime;

/**
 * The tracing runtime (rule files with count/time/trace rules; rewriter/src/trace.rs inserts
 * the calls). Compiled as java.lang.BciTrace (agent/build.rs) and defined by the agent in
 * java.base at early VMStart, so that JDK classes can call it.
 *
 * Its own work is never traced: a thread holds its busy flag ({@link T#busy}) while the
 * runtime does anything that calls other code on it (a site's info parsed, an event formatted,
 * a slowest call described, a SIGQUIT dump), and the probes return at once on a busy thread.
 * Calls of a traced method that the runtime makes (String.substring calls
 * java.util.Arrays.copyOfRange; toString() with `tostring = true`) are so neither counted nor
 * traced, only the program's. Until the flag is set the runtime calls no JDK method but
 * natives: a thread's state is found in {@link #table} (identity hash) and made, like its
 * frames, with Object.clone ({@link T}); primitive arguments and return values stay raw
 * until they are described ({@link #RAW}, {@link #box}).
 *
 * <p>Its own work is not profiled either: while it works on a thread it pauses the cpu=times
 * probes there ({@link #pause}), whose counts so stay the program's.
 *
 * <p>Events are JSON lines handed to a bounded buffer; a writer thread writes them, so a traced
 * thread never waits on I/O, and flushes the file within {@link #FLUSH_NS} of an event. A full
 * buffer drops the event and counts it (and puts a marker line where events were lost: emit);
 * a write error counts the events the file did not take as not written.
 *
 * <p>Times are the program's: the runtime's own work on a thread is added up in {@link T#work}
 * and taken out of every frame it ran in ({@link Frame#w}).
 *
 * Probes run wherever the program runs, also with no stack left (a recursion to
 * StackOverflowError) and before VMInit (JDK methods): nothing of an event runs before
 * {@link #start} switches recording on (the arguments are kept here, not in the injected
 * code), every class the probes use is initialized in start (a class whose initializer fails
 * for lack of stack stays unusable for the whole JVM), and no Throwable of the runtime's
 * reaches the program: what fails after a call was counted is counted as an event that could
 * not be made ({@link T#failed}).
 *
 * Each site (one rule at one method or location) passes a constant info string, parsed once:
 * rule, class, method, descriptor, location, mask, min_duration ns, sample, stack, max_string.
 */
public final class Trace {
    private Trace() {}

    // mask bits (rewriter/src/trace.rs)
    static final int M_COUNT = 1, M_TIME = 2, M_TRACE = 4, M_ARGS = 8, M_RET = 16, M_EXC = 32,
            M_TOSTRING = 64, M_ENTRY = 128, M_EXIT = 256, M_EXCEPTION = 512, M_VOID = 1024,
            M_ENTRY_EVENT = 2048, M_SAME = 4096;
    static final String[] WHERE = {"entry", "exit", "exception", "line", "call", "after-call"};
    /** A rule whose calls are counted at entry and traced at their exceptional exit. */
    static final int LOST_EVENT = M_TRACE | M_ENTRY | M_EXCEPTION;

    /**
     * Per-site stats slots in T.st. SUM: every timed call's time (for the average), SLOWMIN:
     * the shortest of the site's slowest calls kept on the thread.
     */
    static final int W = 7, CNT = 0, TIMED = 1, SELF = 2, MIN = 3, MAX = 4, SLOWMIN = 5, SUM = 6;
    /**
     * Per-rule slots in T.rs (a site's rule: {@link Site#rix}). R_TOTAL: the time of the rule's
     * outermost timed calls (a call inside another call of the same rule on the same thread, a
     * recursion or a mutual recursion of its methods, adds nothing: its time is in the
     * enclosing call's), R_TOP: the rule's innermost frame on the thread's stack (depth + 1,
     * 0 = none), R_SAMPLE: the rule's events on the thread counted for `sample`.
     */
    static final int RW = 3, R_TOTAL = 0, R_TOP = 1, R_SAMPLE = 2;
    /**
     * The slowest calls kept per site and thread: what the summary prints of a rule, so that
     * the rule's slowest calls are among them, whatever their methods and threads.
     */
    static final int SLOWEST = 5;

    /** null constants for the inserted code (a snippet cannot use aconst_null). */
    public static final Object[] NO_ARGS = null;
    public static final Object NONE = null;

    static volatile boolean on;
    /**
     * The threads' states by thread (null until start): open addressing on the thread's
     * identity hash, no JDK code (a ThreadLocal gave every traced thread a ThreadLocal map,
     * whose exit then ran JDK code that cpu=times counted). Entries stay until exit, as the
     * states do ({@link #threads}). Grows under SITES; read without a lock (a miss takes it).
     */
    static volatile T[] table;
    /** Entries in {@link #table}. Guarded by SITES. */
    static int tableUsed;
    static Site[] sites = new Site[256];
    static final Object SITES = new Object();
    static T[] threads = new T[16];
    static int nthreads;

    // the event buffer
    static final Object Q = new Object();
    static String[] queue = new String[1 << 16];
    /** Tests only (set by the agent): buffer capacity, and no writer thread (finish() writes). */
    static int testCapacity;
    static boolean testHold;
    static int qhead, qlen;
    static long dropped;
    /** Events the trace file took (see writeBuf), and those lost to its failure. Guarded by the class lock. */
    static long written, lostErr;
    /** Events dropped since the buffer last took a line (its marker not yet in it). Guarded by Q. */
    static long pendingDrop;
    /** Stderr said that the buffer was full. Guarded by Q. */
    static boolean dropSaid;
    /** Events not taken by the buffer after the trace file failed. Guarded by Q. */
    static long qLostErr;
    /**
     * The final flush is done (finish): an event made after it (a daemon thread's probe that
     * passed the {@link #on} check before it was cleared) is counted in {@link #late}, never
     * written. Guarded by Q.
     */
    static boolean closed;
    /** Events made after the final flush, or left in the buffer by it. Guarded by Q. */
    static long late;
    /** The trace file failed (a write error): nothing more is written. */
    static volatile boolean broken;
    /** The writer flushes the trace file this long after it wrote an event, at the latest. */
    static final long FLUSH_NS = 100_000_000L;
    /**
     * Set by the agent ({@code tracemax=}): the most bytes written to the trace file, 0 = no
     * limit. Past it events are counted ({@link #overLimit} and each thread's {@code over}),
     * not written.
     */
    static long maxBytes;
    /** Bytes written to the trace file. Guarded by the class lock. */
    static long bytes;
    /** Bytes the trace file took (what reached it, obuf's not yet). Guarded by the class lock. */
    static long flushed;
    /** Events not written because the file reached {@link #maxBytes}. Guarded by Q. */
    static long overLimit;
    /** The trace file reached {@link #maxBytes}. */
    static volatile boolean full;
    static java.io.OutputStream out;
    static String outPath;
    /** The trace file was a regular file when it was opened (not a pipe, not /dev/stdout). */
    static boolean outRegular;
    static Thread writer;
    static boolean stopping;
    static String[] ruleNames = new String[0];
    /** traceformat=text: one readable line per event instead of JSON. */
    static boolean text;

    static final class Site {
        String rule, cls, method, desc, loc;
        int mask, sample, stack, maxStr;
        /** The rule's index in {@link #ruleNames} (its length: a rule not named there). */
        int rix;
        long minNs;
    }

    /**
     * A thread's state. Made as a copy of {@link #T0} (Object.clone, a native: a constructor
     * would run Object.<init>, profiled JDK code, on the program's thread), like
     * {@link Frame}s.
     */
    static final class T
            implements Cloneable, java.util.function.Function<java.util.stream.Stream<StackWalker.StackFrame>, Object> {
        Thread thread;
        /** Its identity hash (its slot in {@link #table}). */
        int hash;
        /**
         * The thread's id (Thread.getId(), threadId() since 19: virtual threads have no name),
         * read when its first event is formatted ({@link #tid()}); 0 until then.
         */
        long tid;
        /** The call stack: frames[0 .. depth - 1] (each made once per depth, then reused). */
        Frame[] frames = new Frame[32];
        int depth;
        /** The runtime works on this thread: its probes return at once (see the class comment). */
        boolean busy;
        /** Events of this thread not formatted past tracemax= (added to overLimit in the summary). */
        long over;
        /** Events of this thread not formatted after the trace file failed ({@link #broken}). */
        long lostErr;
        /**
         * Events of this thread that could not be made after their call was counted (no stack
         * or memory left): no lock, so that counting it cannot fail.
         */
        long failed;
        /**
         * A pause of the cpu=times probes whose end failed (no stack left to call
         * BciProbes.resume: a recursion to StackOverflowError): ended at the thread's next call
         * into the runtime ({@link #unpause}), so that the thread does not stay paused.
         */
        Object unpause;
        long[] st = new long[0];
        /** Per-rule slots (R_*), sized at the thread's first call. */
        long[] rs = new long[0];
        /**
         * The nanoseconds the runtime worked on this thread (formatting events and slowest
         * calls, their toString() calls and stacks, parsing sites; an exit's from its clock
         * read on, when it made an event or kept a slowest call): a frame's time is its clock
         * time minus what this grew by meanwhile ({@link Frame#w}), so that no rule times the
         * runtime's work, whatever the order of the rules.
         */
        long work;
        /** The time of the frames that ended at depth 0 (what a frame below them would take as its callees'): see park. */
        long rootChild;
        /**
         * The arguments as the last event formatted on this thread described them (null:
         * none since it was reset): what a slowest call of the same call takes, so that a
         * toString() runs once per event and never for a call whose event is not written.
         */
        String lastArgs;
        long[] slowDur = new long[0];
        String[] slowDesc = new String[0];

        /** The stack walk of this thread's event being formatted: where, how many frames. */
        StringBuilder walkTo;
        int walkFrames;

        /**
         * The event's `stack`: the first walkFrames frames below the runtime's own, read one
         * at a time (the walker fetches them in small batches: the cost follows the frames
         * asked for, not the thread's depth). Its own Function, not a lambda: no
         * invokedynamic bootstrap (nor a class the agent would have to define) in the runtime.
         */
        public Object apply(java.util.stream.Stream<StackWalker.StackFrame> frames) {
            StringBuilder sb = walkTo;
            java.util.Iterator<StackWalker.StackFrame> it = frames.iterator();
            int n = 0;
            while (n < walkFrames && it.hasNext()) {
                StackWalker.StackFrame f = it.next();
                String c = f.getClassName();
                if (c.startsWith("java.lang.BciTrace")) {
                    continue;
                }
                if (n > 0) {
                    sb.append(',');
                }
                str(sb, c + "." + f.getMethodName() + ":" + f.getLineNumber(), 1 << 16);
                n++;
            }
            return null;
        }

        /** A new thread's state: a copy of T0 with its own stack (the empty arrays shared). */
        static T of(Thread thread, int hash) throws CloneNotSupportedException {
            T t = (T) T0.clone();
            t.thread = thread;
            t.hash = hash;
            t.frames = new Frame[32];
            t.rs = new long[(ruleNames.length + 1) * RW];
            return t;
        }

        @SuppressWarnings("deprecation")
        long tid() {
            if (tid == 0) {
                tid = thread.getId();
            }
            return tid;
        }

        long[] st(int id) {
            if ((id + 1) * W > st.length) {
                // (no Math.max: profiled JDK code)
                int n = (id + 1) * W > st.length * 2 ? (id + 1) * W : st.length * 2;
                long[] a = new long[n];
                System.arraycopy(st, 0, a, 0, st.length);
                for (int i = st.length / W; i < n / W; i++) {
                    a[i * W + MIN] = Long.MAX_VALUE;
                }
                st = a;
                long[] d = new long[(n / W) * SLOWEST];
                System.arraycopy(slowDur, 0, d, 0, slowDur.length);
                slowDur = d;
                String[] s = new String[(n / W) * SLOWEST];
                System.arraycopy(slowDesc, 0, s, 0, slowDesc.length);
                slowDesc = s;
            }
            return st;
        }
    }

    /**
     * A frame of a thread's call stack, what enter returns and the exits pass back: an exit
     * ends its own frame, and first the frames above it, callees' whose exit never ran (in a
     * recursion to StackOverflowError the deepest frames' exits may find no stack to call the
     * runtime), so that a lost exit does not make every later exit end the wrong frame.
     */
    static final class Frame implements Cloneable {
        T t;
        /** Its depth: t.frames[d] is this frame. */
        int d;
        /** Its site, and the enclosing frame of the same rule (its depth + 1, 0 = none). */
        int id, up;
        /** When it started, and its timed callees' time. */
        long start, child;
        /** Its thread's {@link T#work} when it started. */
        long w;
        /**
         * The time of the outermost timed calls of its rule inside it: what it adds to the
         * total in their place when it is not timed itself (a rule at exit only, a call that
         * threw).
         */
        long acc;
        /**
         * While a constructor's frame is parked ({@link #park}): its caller's timed callees'
         * time, and its rule's total (or its enclosing frame's acc), when it was parked.
         */
        long parkChild, parkOuter;
        /** Taken off the stack by {@link #park}, not yet put back. */
        boolean parked;

        /** A new frame: a copy of F0 (see {@link T}). */
        static Frame of(T t, int d) throws CloneNotSupportedException {
            Frame f = (Frame) F0.clone();
            f.t = t;
            f.d = d;
            return f;
        }
    }

    /**
     * The events' stack walker (set in start): the frames Throwable.getStackTrace() shows,
     * reflection's included (it used to be that), hidden ones not.
     */
    static StackWalker WALKER;

    /** What thread states and frames are copied from (see {@link T}). */
    static final T T0 = new T();
    static final Frame F0 = new Frame();

    /**
     * Called by the agent at VMInit. config, one per line: the event format (json or text), the
     * trace file path ("" = none), then the rule names (for the summary).
     */
    public static void start(String config) throws java.io.IOException {
        // java.lang.BciProbes, the cpu=times runtime (also for probe rules naming it), is
        // defined at VMStart when there is one: found here by calling it (not there:
        // NoClassDefFoundError; bci/runtime/Probes, the runtime of probe rules naming it, is
        // not reachable from java.base and is not paused)
        Object p = null;
        try {
            p = BciProbes.pause();
            probes = true;
        } catch (Throwable e) {
            probes = false;
        }
        try {
            start0(config);
        } finally {
            resume(p);
        }
    }

    static void start0(String config) throws java.io.IOException {
        table = new T[64];
        int n = 0;
        for (int i = 0; i < config.length(); i++) {
            if (config.charAt(i) == '\n') {
                n++;
            }
        }
        String[] f = new String[n + 1];
        int from = 0;
        for (int i = 0; i <= n; i++) {
            int nl = config.indexOf('\n', from);
            int end = nl < 0 ? config.length() : nl;
            f[i] = config.substring(from, end);
            from = end + 1;
        }
        // f[0]: "json" or "text", f[1]: the trace file ("" = none), then the rules
        text = f[0].equals("text");
        String path = n < 1 || f[1].isEmpty() ? null : f[1];
        ruleNames = new String[Math.max(0, n - 1)];
        System.arraycopy(f, 2, ruleNames, 0, ruleNames.length);
        if (testCapacity > 0) {
            queue = new String[testCapacity];
        }
        if (path != null) {
            // buffered here (obuf): an event counts as written once the file took it
            out = new java.io.FileOutputStream(path);
            outPath = path;
            outRegular = new java.io.File(path).isFile();
        }
        // Stack walking initializes classes of its own (StackTraceElement$HashedModules) at its
        // first use. Done first in an event of a method that ran out of stack, that
        // initialization fails and the class stays unusable: every later getStackTrace() in
        // the JVM, the program's own included, threw NoClassDefFoundError. Done here, with
        // stack to spare, it cannot fail later (warm() walks with WALKER, as `stack =` does).
        new Throwable().getStackTrace();
        WALKER = StackWalker.getInstance(StackWalker.Option.SHOW_REFLECT_FRAMES);
        warm();
        if (path != null && !testHold) {
            Thread w = new Writer();
            w.setDaemon(true);
            writer = w;
            w.start();
        }
        on = true;
    }

    static final class Writer extends Thread {
        Writer() {
            super("bci-trace-writer");
        }

        public void run() {
            // nothing this thread runs is recorded: not traced (busy), not profiled (paused
            // for good: its state, if any, is not put back)
            pause();
            T t = cur();
            if (t != null) {
                t.busy = true;
            }
            String[] batch = new String[1024];
            // written since the last flush, and when that was: the file gets what was written
            // at most FLUSH_NS later (tail -f follows it; a SIGKILL loses at most that), and
            // an idle program costs no flush
            boolean dirty = false;
            long flushed = System.nanoTime();
            while (true) {
                synchronized (Q) {
                    while (qlen == 0 && !stopping) {
                        long ms = 100;
                        if (dirty) {
                            ms = (FLUSH_NS - (System.nanoTime() - flushed)) / 1_000_000L;
                            if (ms <= 0) {
                                break;
                            }
                        }
                        try {
                            Q.wait(ms);
                        } catch (InterruptedException e) {
                            // the program interrupted it (one that interrupts every thread
                            // it sees, Thread.getAllStackTraces() lists this one): only
                            // finish() (stopping) ends the writer, else the buffer fills
                            // and events are dropped
                        }
                    }
                    if (qlen == 0 && stopping) {
                        return;
                    }
                }
                if (drain(batch) > 0) {
                    dirty = true;
                }
                if (dirty && System.nanoTime() - flushed >= FLUSH_NS) {
                    flush();
                    dirty = false;
                    flushed = System.nanoTime();
                }
            }
        }
    }

    /**
     * Takes up to batch.length events from the buffer and writes them; returns how many. One
     * thread at a time (the class lock, taken before Q), so that the file has the events in
     * the buffer's order whoever writes them (the writer, a SIGQUIT dump, finish).
     */
    static int drain(String[] batch) {
        synchronized (Trace.class) {
            int n = 0;
            synchronized (Q) {
                while (qlen > 0 && n < batch.length) {
                    batch[n++] = queue[qhead];
                    queue[qhead] = null;
                    qhead = (qhead + 1) % queue.length;
                    qlen--;
                }
            }
            write(batch, n);
            return n;
        }
    }

    /**
     * Writes what the buffer holds now (not what is added meanwhile) and flushes the file; then
     * the marker of the events dropped since the buffer last took one, if it is empty.
     */
    static void drainAll() {
        String[] batch = new String[1024];
        int rounds = queue.length / batch.length + 1;
        while (rounds-- > 0 && drain(batch) > 0) {
        }
        synchronized (Trace.class) {
            String m = null;
            synchronized (Q) {
                if (qlen == 0 && pendingDrop > 0) {
                    m = marker(pendingDrop);
                    pendingDrop = 0;
                }
            }
            if (m != null) {
                batch[0] = m;
                write(batch, 1);
            }
        }
        flush();
    }

    /** The file's bytes not yet written (see write), and how many events they hold. */
    static final byte[] obuf = new byte[1 << 16];
    static int olen;
    static long opending;
    /**
     * Where each item in obuf ends: an event's end offset, or {@code ~end} for a marker line;
     * {@code oitems} of them. After a write that failed partway (a full disk), the file is cut
     * back to the last whole item it took, and only the events it took count as written.
     */
    static int[] oends = new int[256];
    static int oitems;

    /**
     * Writes the file's buffer; its events count as written once the file took them, as not
     * written (lostErr) when it failed. Under the class lock.
     */
    static boolean writeBuf() {
        if (olen == 0) {
            return out != null;
        }
        int n = olen;
        long k = opending;
        int items = oitems;
        olen = 0;
        opending = 0;
        oitems = 0;
        if (out == null) {
            lostErr += k;
            return false;
        }
        try {
            out.write(obuf, 0, n);
            flushed += n;
            written += k;
            return true;
        } catch (java.io.IOException e) {
            long took = tookWhole(items);
            written += took;
            lostErr += k - took;
            failed(e);
            return false;
        }
    }

    /**
     * After a write of obuf that failed partway (a full disk): the events of the first
     * {@code items} items in obuf that reached the file whole; a regular file is cut back to
     * the end of the last whole item (a JSON line cut short broke every reader of the file,
     * and the summary called the events the file had taken not written). java.io only (no
     * FileChannel: an interrupt of the writer would close it).
     */
    static long tookWhole(int items) {
        try {
            java.io.File f = new java.io.File(outPath);
            if (!f.isFile()) {
                return 0;
            }
            long got = f.length() - flushed;
            long events = 0;
            int keep = 0;
            for (int j = 0; j < items; j++) {
                int end = oends[j] >= 0 ? oends[j] : ~oends[j];
                if (end > got) {
                    break;
                }
                keep = end;
                if (oends[j] >= 0) {
                    events++;
                }
            }
            if (got > keep) {
                try (java.io.RandomAccessFile r = new java.io.RandomAccessFile(f, "rw")) {
                    r.setLength(flushed + keep);
                }
            }
            flushed += keep;
            return events;
        } catch (java.io.IOException | RuntimeException e) {
            return 0;
        }
    }

    /** The trace file failed: no more is written, what follows counts as not written. */
    static void failed(java.io.IOException e) {
        out = null;
        broken = true;
        System.err.println("bciagent: trace file " + outPath + ": " + e
                + "; events are no longer written (the summary counts them as not written)");
    }

    static void flush() {
        synchronized (Trace.class) {
            if (writeBuf()) {
                try {
                    out.flush();
                } catch (java.io.IOException e) {
                    failed(e);
                }
            }
        }
    }

    /** A line of the buffer that is no event: the marker of dropped events (see emit). */
    static boolean isMarker(String line) {
        return line.startsWith(text ? "# " : "{\"dropped\"");
    }

    /** The line put where n events were dropped (buffer full). */
    static String marker(long n) {
        return text ? "# " + n + " events dropped here (buffer full)\n"
                : "{\"dropped\":" + n + ",\"reason\":\"buffer full\"}\n";
    }

    /**
     * Writes n lines of batch (through obuf: written, and counted as such, when the file
     * takes them). Under the class lock (the file's order is the buffer's).
     */
    static void write(String[] batch, int n) {
        synchronized (Trace.class) {
            int i = 0;
            for (; i < n; i++) {
                String line = batch[i];
                boolean ev = !isMarker(line);
                if (out == null) {
                    break;
                }
                byte[] b = line.getBytes(java.nio.charset.StandardCharsets.UTF_8);
                if (maxBytes > 0 && bytes + b.length > maxBytes) {
                    long over = 0;
                    for (int k = i; k < n; k++) {
                        if (!isMarker(batch[k])) {
                            over++;
                        }
                        batch[k] = null;
                    }
                    if (!full) {
                        full = true;
                        System.err.println("bciagent: trace file " + outPath + " reached tracemax=" + maxBytes
                                + " bytes; later events are counted, not written");
                    }
                    synchronized (Q) {
                        overLimit += over;
                    }
                    return;
                }
                batch[i] = null;
                bytes += b.length;
                if (olen + b.length > obuf.length && !writeBuf()) {
                    if (ev) {
                        lostErr++;
                    }
                    i++;
                    break;
                }
                if (b.length > obuf.length) {
                    try {
                        out.write(b);
                        flushed += b.length;
                        if (ev) {
                            written++;
                        }
                    } catch (java.io.IOException e) {
                        // (no whole item in obuf: the part of this line written is cut off)
                        tookWhole(0);
                        if (ev) {
                            lostErr++;
                        }
                        failed(e);
                    }
                } else {
                    System.arraycopy(b, 0, obuf, olen, b.length);
                    olen += b.length;
                    if (oitems == oends.length) {
                        // (System.arraycopy: java.lang, which tracing never instruments)
                        int[] more = new int[2 * oitems];
                        System.arraycopy(oends, 0, more, 0, oitems);
                        oends = more;
                    }
                    oends[oitems++] = ev ? olen : ~olen;
                    if (ev) {
                        opending++;
                    }
                }
            }
            // the file failed: the rest is not written
            for (int k = i; k < n; k++) {
                if (!isMarker(batch[k])) {
                    lostErr++;
                }
                batch[k] = null;
            }
        }
    }

    /**
     * Hands an event's line to the buffer; returns true when it is the first that found the
     * buffer full (stderr says so once). A line taken after events were dropped follows a
     * marker that says how many (the buffer takes both or neither), so that a reader of the
     * trace knows where entry/exit pairs are broken.
     */
    static boolean emit(String line) {
        synchronized (Q) {
            if (closed) {
                late++;
                return false;
            }
            if (full) {
                overLimit++;
                return false;
            }
            if (broken) {
                qLostErr++;
                return false;
            }
            int need = pendingDrop > 0 ? 2 : 1;
            if (qlen + need > queue.length) {
                dropped++;
                pendingDrop++;
                if (!dropSaid) {
                    dropSaid = true;
                    return true;
                }
                return false;
            }
            if (pendingDrop > 0) {
                queue[(qhead + qlen) % queue.length] = marker(pendingDrop);
                qlen++;
                pendingDrop = 0;
            }
            queue[(qhead + qlen) % queue.length] = line;
            qlen++;
            if (qlen == need) {
                Q.notify();
            }
            return false;
        }
    }

    /** The last thread's state: one load and a compare when one thread makes the calls. */
    static T last;

    static T cur() {
        T t = last;
        Thread me = Thread.currentThread();
        if (t != null && t.thread == me) {
            return t;
        }
        T[] tab = table;
        if (tab == null) {
            return null;
        }
        int h = System.identityHashCode(me);
        int m = tab.length - 1;
        for (int i = h & m; ; i = (i + 1) & m) {
            T s = tab[i];
            if (s == null) {
                break;
            }
            if (s.thread == me) {
                last = s;
                return s;
            }
        }
        t = register(me, h);
        last = t;
        return t;
    }

    /**
     * The calling thread's state, made on its first call (under SITES: a thread finds its own
     * entry, or not, in a table another thread is growing; then it looks again here).
     */
    static T register(Thread me, int h) {
        synchronized (SITES) {
            T[] tab = table;
            int m = tab.length - 1;
            int i = h & m;
            for (T s; (s = tab[i]) != null; i = (i + 1) & m) {
                if (s.thread == me) {
                    return s;
                }
            }
            T t;
            try {
                t = T.of(me, h);
            } catch (CloneNotSupportedException e) {
                return null; // (not thrown: T is Cloneable)
            }
            // registered first, in the summary's list: a state in it and not in the table
            // (no memory left to grow it) is made again by a later call, and the summary
            // adds up both
            if (nthreads == threads.length) {
                T[] a = new T[threads.length * 2];
                System.arraycopy(threads, 0, a, 0, threads.length);
                threads = a;
            }
            threads[nthreads++] = t;
            if ((tableUsed + 1) * 2 > tab.length) {
                T[] n = new T[tab.length * 2];
                int nm = n.length - 1;
                for (T o : tab) {
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
                i = h & m;
                while (tab[i] != null) {
                    i = (i + 1) & m;
                }
            }
            tab[i] = t;
            tableUsed++;
            table = tab;
            return t;
        }
    }

    /**
     * Whether java.lang.BciProbes is there (see {@link #start}): the cpu=times probes on a
     * thread record nothing while the runtime works on it ({@link #pause}).
     */
    static boolean probes;

    /**
     * Pauses the cpu=times probes on this thread while the runtime works on it (where it holds
     * the busy flag: parses a site, formats an event or a slowest call; also start, the
     * writer, finish and dump): the JDK methods it calls, and a program's toString() with
     * `tostring = true`, are its calls, not the program's, and are not profiled. Returns the token for {@link #resume} (null: nothing
     * paused). How the probes keep their fast path free of a test: Probes.pause.
     */
    static Object pause() {
        return probes ? BciProbes.pause() : null;
    }

    /**
     * Ends a pause where a failure cannot matter (start, the writer, finish, dump: with stack
     * to spare). On a traced thread the pause's end is inlined with a catch: the call can find
     * no stack left (the yellow zone guarded again since the pause began), and then the thread
     * keeps the token in T.unpause for its next call (see unpause).
     */
    static void resume(Object p) {
        if (p != null) {
            BciProbes.resume(p);
        }
    }

    /** Ends the pause whose end had no stack left (T.unpause), at the thread's next call. */
    static void unpause(T t) {
        Object p = t.unpause;
        try {
            BciProbes.resume(p);
            t.unpause = null;
        } catch (Throwable x) {
            // still no stack: at the next call
        }
    }

    static Site site(T t, int id, String info) {
        Site[] a = sites;
        if (id < a.length) {
            Site s = a[id];
            if (s != null) {
                return s;
            }
        }
        return addSite(t, id, info);
    }

    /**
     * The site's first call (on any thread): parses its info. The runtime's own work (busy):
     * parsing calls String.substring, which calls java.util.Arrays.copyOfRange; a rule on that
     * method called back into the runtime, which parsed the same site again, to
     * StackOverflowError.
     */
    static Site addSite(T t, int id, String info) {
        boolean was = t.busy;
        long w0 = System.nanoTime();
        t.busy = true;
        Object p = null;
        try {
            p = pause();
            synchronized (SITES) {
                if (id >= sites.length) {
                    Site[] a = new Site[Math.max(id + 1, sites.length * 2)];
                    System.arraycopy(sites, 0, a, 0, sites.length);
                    sites = a;
                }
                Site s = sites[id];
                if (s != null) {
                    return s;
                }
                s = parse(info);
                sites[id] = s;
                return s;
            }
        } finally {
            t.busy = was;
            if (p != null) {
                try {
                    BciProbes.resume(p);
                } catch (Throwable x) {
                    t.unpause = p; // no stack left: at the next call
                }
            }
            if (!was) {
                try {
                    t.work += System.nanoTime() - w0;
                } catch (Throwable x) {
                    // no stack left: this work stays in the enclosing frames' times (inline: a call
                    // here could throw out of the finally)
                }
            }
        }
    }

    /** A site's info string (rewriter/src/trace.rs `info`): tab-separated fields. */
    static Site parse(String info) {
        Site s = new Site();
        String[] f = new String[10];
        int from = 0;
        for (int i = 0; i < 10; i++) {
            int tab = info.indexOf('\t', from);
            int end = tab < 0 ? info.length() : tab;
            f[i] = info.substring(from, end);
            from = end + 1;
        }
        s.rule = f[0];
        s.cls = f[1];
        s.method = f[2];
        s.desc = f[3];
        s.loc = f[4];
        s.mask = Integer.parseInt(f[5]);
        s.minNs = Long.parseLong(f[6]);
        s.sample = Math.max(1, Integer.parseInt(f[7]));
        s.stack = Integer.parseInt(f[8]);
        s.maxStr = Integer.parseInt(f[9]);
        s.rix = ruleNames.length;
        for (int i = 0; i < ruleNames.length; i++) {
            if (ruleNames[i].equals(s.rule)) {
                s.rix = i;
            }
        }
        return s;
    }

    /**
     * The arguments' array of an event, or null while recording is off (before VMInit, after
     * exit): the injected code fills it through {@code arg}, which does nothing with null. Its
     * last element is not an argument: it holds the primitive arguments, raw (see arg).
     */
    public static Object[] newArgs(int n) {
        if (!on) {
            return null;
        }
        try {
            return new Object[n + 1];
        } catch (Throwable x) {
            return null; // no memory or stack left: the event has no arguments
        }
    }

    /**
     * What an argument's element holds when the argument is a primitive (RAW[k], its kind
     * KINDS[k]): its value is in the array's last element, a long[] (float and double as
     * their bits), boxed only when an event or a slowest call is described (box). Boxing in
     * arg called Integer.valueOf & co., profiled JDK code, on every traced call.
     */
    static final Object[] RAW = {new Object(), new Object(), new Object(), new Object(),
            new Object(), new Object(), new Object()};
    static final char[] KINDS = {'I', 'J', 'F', 'D', 'B', 'C', 'S'};

    /** Keeps primitive argument i of kind RAW[k] raw (no call but array stores). */
    static void raw(Object[] a, int i, long v, int k) {
        if (a != null) {
            try {
                int n = a.length - 1;
                long[] r = (long[]) a[n];
                if (r == null) {
                    r = new long[n];
                    a[n] = r;
                }
                r[i] = v;
                a[i] = RAW[k];
            } catch (Throwable x) {
                // left null
            }
        }
    }

    /** Argument i of args (see newArgs), a primitive boxed. */
    static Object argument(Object[] args, int i) {
        Object v = args[i];
        for (int k = 0; k < RAW.length; k++) {
            if (v == RAW[k]) {
                return box(((long[]) args[args.length - 1])[i], KINDS[k]);
            }
        }
        return v;
    }

    // one arg per type of value: a primitive kept raw (see RAW), only when there is an array

    public static void arg(Object[] a, int i, Object v) {
        if (a != null) {
            a[i] = v;
        }
    }

    public static void arg(Object[] a, int i, int v) {
        raw(a, i, v, 0);
    }

    public static void arg(Object[] a, int i, long v) {
        raw(a, i, v, 1);
    }

    public static void arg(Object[] a, int i, float v) {
        raw(a, i, Float.floatToRawIntBits(v), 2);
    }

    public static void arg(Object[] a, int i, double v) {
        raw(a, i, Double.doubleToRawLongBits(v), 3);
    }

    public static void arg(Object[] a, int i, boolean v) {
        if (a != null) {
            a[i] = v ? Boolean.TRUE : Boolean.FALSE;
        }
    }

    public static void arg(Object[] a, int i, byte v) {
        raw(a, i, v, 4);
    }

    public static void arg(Object[] a, int i, char v) {
        raw(a, i, v, 5);
    }

    public static void arg(Object[] a, int i, short v) {
        raw(a, i, v, 6);
    }

    /** Method entry of a timed or traced rule: pushes a frame; returns its token (null: not recording). */
    public static Object enter(int id, String info, Object[] args) {
        if (!on) {
            return null;
        }
        T t = null;
        int d = -1;
        try {
            t = cur();
            if (t == null || t.busy) {
                return null;
            }
            if (t.unpause != null) {
                try {
                    unpause(t);
                } catch (Throwable x) {
                    // no stack to call it: at the next call
                }
            }
            Site s = site(t, id, info);
            // sized before the frame is pushed: end reads the site's slots
            long[] st = t.st(id);
            d = t.depth;
            Frame[] fs = t.frames;
            if (d == fs.length) {
                Frame[] a = new Frame[d * 2];
                System.arraycopy(fs, 0, a, 0, d);
                t.frames = fs = a;
            }
            Frame f = fs[d];
            if (f == null) {
                f = Frame.of(t, d);
                fs[d] = f;
            }
            f.id = id;
            f.child = 0;
            f.acc = 0;
            int rb = s.rix * RW;
            int up = (int) t.rs[rb + R_TOP];
            f.up = up <= d ? up : 0;
            t.depth = d + 1;
            if ((s.mask & M_ENTRY) != 0) {
                st[id * W + CNT]++;
                if ((s.mask & (M_TRACE | M_ENTRY_EVENT)) == (M_TRACE | M_ENTRY_EVENT) && outPath != null) {
                    try {
                        if (sampled(t, s)) {
                            long w0 = System.nanoTime();
                            event(t, s, 0, w0, -1, args, null, 0, NOT_RAW, null);
                            // (a failure here, after the event, would count it twice)
                            try {
                                t.work += System.nanoTime() - w0;
                            } catch (Throwable x) {
                                // no stack left: this work stays in the enclosing frames' times
                            }
                        }
                    } catch (Throwable x) {
                        t.failed++;
                    }
                }
            }
            f.w = t.work;
            f.start = System.nanoTime();
            // last: a frame taken back (below) was never the rule's innermost
            t.rs[rb + R_TOP] = d + 1;
            return f;
        } catch (Throwable x) {
            // no stack or memory left: this call is not timed (its frame, if pushed, is taken
            // back; its exit gets null and does nothing)
            if (t != null && d >= 0 && t.depth == d + 1) {
                t.depth = d;
            }
            return null;
        }
    }

    /** Whether the rule's event is made: every `sample`-th of the rule's on the thread. */
    static boolean sampled(T t, Site s) {
        return s.sample == 1 || ++t.rs[s.rix * RW + R_SAMPLE] % s.sample == 0;
    }

    /** Normal exit: ret is the return value (null if not captured or void). */
    public static void exit(Object ret, Object frame, int id, Object[] args) {
        long now = System.nanoTime();
        if (frame == null) {
            return;
        }
        end((Frame) frame, now, id, 1, args, ret, 0, NOT_RAW, null);
    }

    // the primitive return values: boxed only for an event that is made (see box), not for
    // every exit of a frame that records

    public static void exit(int ret, Object frame, int id, Object[] args) {
        long now = System.nanoTime();
        if (frame == null) {
            return;
        }
        end((Frame) frame, now, id, 1, args, null, ret, 'I', null);
    }

    public static void exit(long ret, Object frame, int id, Object[] args) {
        long now = System.nanoTime();
        if (frame == null) {
            return;
        }
        end((Frame) frame, now, id, 1, args, null, ret, 'J', null);
    }

    public static void exit(float ret, Object frame, int id, Object[] args) {
        long now = System.nanoTime();
        if (frame == null) {
            return;
        }
        end((Frame) frame, now, id, 1, args, null, Float.floatToRawIntBits(ret), 'F', null);
    }

    public static void exit(double ret, Object frame, int id, Object[] args) {
        long now = System.nanoTime();
        if (frame == null) {
            return;
        }
        end((Frame) frame, now, id, 1, args, null, Double.doubleToRawLongBits(ret), 'D', null);
    }

    public static void exit(boolean ret, Object frame, int id, Object[] args) {
        long now = System.nanoTime();
        if (frame == null) {
            return;
        }
        end((Frame) frame, now, id, 1, args, ret ? Boolean.TRUE : Boolean.FALSE, 0, NOT_RAW, null);
    }

    public static void exit(byte ret, Object frame, int id, Object[] args) {
        long now = System.nanoTime();
        if (frame == null) {
            return;
        }
        end((Frame) frame, now, id, 1, args, null, ret, 'B', null);
    }

    public static void exit(char ret, Object frame, int id, Object[] args) {
        long now = System.nanoTime();
        if (frame == null) {
            return;
        }
        end((Frame) frame, now, id, 1, args, null, ret, 'C', null);
    }

    public static void exit(short ret, Object frame, int id, Object[] args) {
        long now = System.nanoTime();
        if (frame == null) {
            return;
        }
        end((Frame) frame, now, id, 1, args, null, ret, 'S', null);
    }

    /** An exit's primitive return value is not raw: its ret is the value itself. */
    static final char NOT_RAW = 0;

    /**
     * A primitive return value passed raw ({@code kind}: its descriptor letter, float and
     * double as their bits), boxed here (paused: valueOf is profiled JDK code).
     */
    static Object box(long raw, char kind) {
        switch (kind) {
            case 'I':
                return Integer.valueOf((int) raw);
            case 'J':
                return Long.valueOf(raw);
            case 'F':
                return Float.valueOf(Float.intBitsToFloat((int) raw));
            case 'D':
                return Double.valueOf(Double.longBitsToDouble(raw));
            case 'B':
                return Byte.valueOf((byte) raw);
            case 'C':
                return Character.valueOf((char) raw);
            case 'S':
                return Short.valueOf((short) raw);
            default:
                return null;
        }
    }

    /**
     * Before a constructor's super()/this() call, which no handler may cover: its frame (the
     * top one) is taken off the stack, so that a call that throws leaves no frame behind (it
     * stays counted, without an exception event or time). {@link #unpark} after the call
     * puts it back, with what the call added to its caller's frame and to its rule's total
     * as its own. Never throws.
     */
    public static void park(Object frame) {
        if (frame == null) {
            return;
        }
        try {
            Frame f = (Frame) frame;
            T t = f.t;
            int d = f.d;
            if (t.depth != d + 1 || t.frames[d] != f) {
                return;
            }
            int rb = sites[f.id].rix * RW;
            t.rs[rb + R_TOP] = f.up;
            f.parkChild = d > 0 ? t.frames[d - 1].child : t.rootChild;
            f.parkOuter = f.up > 0 ? t.frames[f.up - 1].acc : t.rs[rb + R_TOTAL];
            // the call's frames get their own (this one is held by the constructor)
            t.frames[d] = null;
            t.depth = d;
            f.parked = true;
        } catch (Throwable x) {
            // no stack left: the frame stays (ended as lost by an exit below it)
        }
    }

    /** After a constructor's super()/this() call returned: its frame back on top (see park). */
    public static void unpark(Object frame) {
        if (frame == null) {
            return;
        }
        try {
            Frame f = (Frame) frame;
            if (!f.parked) {
                return;
            }
            T t = f.t;
            int d = t.depth;
            Frame[] fs = t.frames;
            if (d == fs.length) {
                Frame[] a = new Frame[d * 2];
                System.arraycopy(fs, 0, a, 0, d);
                t.frames = fs = a;
            }
            int rb = sites[f.id].rix * RW;
            if (d > 0) {
                long c = fs[d - 1].child - f.parkChild;
                fs[d - 1].child -= c;
                f.child += c;
            } else {
                f.child += t.rootChild - f.parkChild;
            }
            if (f.up > 0 && f.up <= d) {
                long c = fs[f.up - 1].acc - f.parkOuter;
                fs[f.up - 1].acc -= c;
                f.acc += c;
            } else if (f.up == 0) {
                long c = t.rs[rb + R_TOTAL] - f.parkOuter;
                t.rs[rb + R_TOTAL] -= c;
                f.acc += c;
            }
            fs[d] = f;
            f.d = d;
            f.parked = false;
            t.depth = d + 1;
            t.rs[rb + R_TOP] = d + 1;
        } catch (Throwable x) {
            // no stack or memory left: its exit finds it gone and does nothing
        }
    }

    /** Exceptional exit (the catch-all handler; the exception is re-thrown after). */
    public static void thrown(Throwable e, Object frame, int id, Object[] args) {
        long now = System.nanoTime();
        if (frame == null) {
            return;
        }
        end((Frame) frame, now, id, 2, args, null, 0, NOT_RAW, e);
    }

    /**
     * Ends the top frame. Never throws: a failure before the call is counted leaves it
     * uncounted; after, its event is counted as not made.
     */
    static void end(Frame f, long now, int id, int where, Object[] args, Object ret, long raw,
            char kind, Throwable e) {
        T t = f.t;
        int d = f.d;
        if (t.depth <= d) {
            return; // ended already (as lost, by an exit of a frame below it)
        }
        if (t.unpause != null) {
            try {
                unpause(t);
            } catch (Throwable x) {
                // no stack to call it: at the next call
            }
        }
        try {
            // frames above this one lost their exit: ended now, not timed (no calls in this
            // loop: it cannot run out of stack halfway). A lost call counted at its entry
            // asked for the event of its exit, which ended by an exception (no stack left to
            // call the runtime there, the StackOverflowError went on): that event could not
            // be made (past tracemax=: it would not have been written), unless its rule has
            // a min_duration (the call's duration is not known) or the sample skips it.
            Frame[] fs = t.frames;
            for (int k = t.depth - 1; k > d; k--) {
                t.depth = k;
                Frame l = fs[k];
                Site ls = sites[l.id];
                int lb = ls.rix * RW;
                t.rs[lb + R_TOP] = l.up;
                if (l.up > 0) {
                    fs[l.up - 1].acc += l.acc;
                } else {
                    t.rs[lb + R_TOTAL] += l.acc;
                }
                fs[k - 1].child += (ls.mask & M_SAME) != 0 ? l.child : now - l.start - (t.work - l.w);
                if ((ls.mask & LOST_EVENT) == LOST_EVENT && ls.minNs == 0 && outPath != null
                        && (ls.sample == 1 || ++t.rs[lb + R_SAMPLE] % ls.sample == 0)) {
                    if (full) {
                        t.over++;
                    } else {
                        t.failed++;
                    }
                }
            }
        } catch (Throwable x) {
            return; // (no failure expected) this frame is ended as lost by its caller's exit
        }
        t.depth = d;
        try {
            // first (no call before it can fail): the rule's innermost frame is the one that
            // enclosed this one (st was sized by enter)
            long[] st = t.st;
            int b = id * W;
            int up = f.up;
            Site s = sites[id];
            int rb = s.rix * RW;
            t.rs[rb + R_TOP] = up;
            // the call's time, not the runtime's work in it (events of callees or of other
            // rules' frames of this call: T.work)
            long dur = now - f.start - (t.work - f.w);
            long self = dur - f.child;
            Frame[] fs = t.frames;
            if (d > 0) {
                // a second rule's frame of the same invocation (M_SAME) is no callee of the
                // frame below: only its callees' time is
                fs[d - 1].child += (s.mask & M_SAME) != 0 ? f.child : dur;
            } else {
                t.rootChild += dur; // (read by park and unpark only)
            }
            int bit = where == 1 ? M_EXIT : M_EXCEPTION;
            boolean timed = (s.mask & bit) != 0;
            // the total counts the outermost timed calls of the rule: this one when it is
            // timed, else those inside it
            long outer = timed ? dur : f.acc;
            if (up > 0) {
                fs[up - 1].acc += outer;
            } else {
                t.rs[rb + R_TOTAL] += outer;
            }
            if (!timed) {
                return;
            }
            if ((s.mask & M_ENTRY) == 0) {
                st[b + CNT]++;
            }
            st[b + TIMED]++;
            st[b + SUM] += dur;
            st[b + SELF] += self;
            if (dur < st[b + MIN]) {
                st[b + MIN] = dur;
            }
            if (dur > st[b + MAX]) {
                st[b + MAX] = dur;
            }
            // the event first: a slowest call takes its description of the arguments (a
            // toString() runs for a written event only, once)
            boolean ev = false;
            if ((s.mask & M_TRACE) != 0 && dur >= s.minNs && outPath != null) {
                try {
                    if (sampled(t, s)) {
                        ev = true;
                        t.lastArgs = null;
                        event(t, s, where, now, dur, args, ret, raw, kind, e);
                    }
                } catch (Throwable x) {
                    t.failed++;
                }
            }
            boolean slow = dur > st[b + SLOWMIN];
            if (slow) {
                try {
                    slowest(t, s, id, dur, args, ev);
                } catch (Throwable x) {
                    // no stack or memory left: not among the slowest calls
                }
            }
            if (ev) {
                t.lastArgs = null;
            }
            if (ev || slow) {
                // the runtime's work since this exit read the clock: not the enclosing frames'
                // time (T.work; one clock read, only for an exit that worked)
                try {
                    t.work += System.nanoTime() - now;
                } catch (Throwable x) {
                    // no stack left: this work stays in the enclosing frames' times
                }
            }
        } catch (Throwable x) {
            // no stack or memory left before the call was counted: not counted
        }
    }

    /**
     * Keeps the SLOWEST slowest calls of a site on this thread (with their arguments: objects
     * as the call's event described them, toString() included, when it was written; else as
     * class@identityHash, no toString() called).
     */
    static void slowest(T t, Site s, int id, long dur, Object[] args, boolean ev) {
        if (t.busy) {
            return;
        }
        t.busy = true;
        Object p = null;
        try {
            p = pause();
            int b = id * SLOWEST;
            int low = b;
            for (int i = b + 1; i < b + SLOWEST; i++) {
                if (t.slowDur[i] < t.slowDur[low]) {
                    low = i;
                }
            }
            t.slowDur[low] = dur;
            StringBuilder sb = new StringBuilder();
            sb.append(s.cls).append('.').append(s.method).append(s.desc);
            if (args != null) {
                sb.append(" args=");
                String a = t.lastArgs;
                if (ev && a != null) {
                    sb.append(a);
                } else {
                    appendArgs(sb, args, s, false);
                }
            }
            sb.append(" thread=").append(oneLine(t.thread.getName())).append(" tid=").append(t.tid());
            t.slowDesc[low] = sb.toString();
            long m = Long.MAX_VALUE;
            for (int i = b; i < b + SLOWEST; i++) {
                m = Math.min(m, t.slowDur[i]);
            }
            t.st[id * W + SLOWMIN] = m;
        } finally {
            t.busy = false;
            if (p != null) {
                try {
                    BciProbes.resume(p);
                } catch (Throwable x) {
                    t.unpause = p; // no stack left: at the next call
                }
            }
        }
    }


    /** A point event: count, and a trace event when the rule traces (where: 0 entry, 1 exit, 2 exception, 3 line, 4 call). */
    public static void hit(int id, String info, int where, Object[] args) {
        if (!on) {
            return;
        }
        T t;
        Site s;
        long[] st;
        try {
            t = cur();
            if (t == null || t.busy) {
                return;
            }
            if (t.unpause != null) {
                try {
                    unpause(t);
                } catch (Throwable x) {
                    // no stack to call it: at the next call
                }
            }
            s = site(t, id, info);
            st = t.st(id);
        } catch (Throwable x) {
            return; // no stack or memory left: not counted
        }
        st[id * W + CNT]++;
        if ((s.mask & M_TRACE) != 0 && outPath != null) {
            try {
                if (sampled(t, s)) {
                    long w0 = System.nanoTime();
                    event(t, s, where, w0, -1, args, null, 0, NOT_RAW, null);
                    // (a failure here, after the event, would count it twice: caught apart)
                    try {
                        t.work += System.nanoTime() - w0;
                    } catch (Throwable x) {
                        // no stack left: this work stays in the enclosing frames' times
                    }
                }
            } catch (Throwable x) {
                t.failed++;
            }
        }
    }

    /** An event (ret, or raw of kind: see box) formatted and handed to the buffer. */
    static void event(T t, Site s, int where, long ts, long dur, Object[] args, Object ret,
            long raw, char kind, Throwable e) {
        if (t.busy || outPath == null) {
            return; // no trace file: the summary still counts the calls
        }
        if (full) {
            // past tracemax=: counted without formatting the line, in the thread's own count
            // (no lock: a busy traced program keeps running at full speed past the limit)
            t.over++;
            return;
        }
        if (broken) {
            // the trace file failed: counted as not written, not formatted
            t.lostErr++;
            return;
        }
        t.busy = true;
        Object p = null;
        try {
            p = pause();
            if (emit(format(t, s, where, ts, dur, args, kind == NOT_RAW ? ret : box(raw, kind), e,
                    text))) {
                System.err.println("bciagent: trace buffer full (" + queue.length
                        + " events: the writer fell behind); events that find it full are dropped,"
                        + " counted in the summary and marked in the trace file where they were lost");
            }
        } catch (Throwable x) {
            // no stack or memory left to make the event (a toString that throws is caught
            // where it is called): not a full buffer
            t.failed++;
        } finally {
            t.busy = false;
            if (p != null) {
                try {
                    BciProbes.resume(p);
                } catch (Throwable x) {
                    t.unpause = p; // no stack left: at the next call
                }
            }
        }
    }

    /** The event's line (JSON, or text when {@code text}). */
    static String format(T t, Site s, int where, long ts, long dur, Object[] args, Object ret,
            Throwable e, boolean text) {
        StringBuilder sb = new StringBuilder(160);
        if (text) {
            // ts_ns [thread #tid] rule event class.method desc (location)
            sb.append(ts).append(" [").append(oneLine(t.thread.getName())).append(" #").append(t.tid())
                    .append("] ").append(s.rule)
                    .append(' ').append(WHERE[where]).append(' ').append(s.cls).append('.')
                    .append(s.method).append(s.desc);
            if (where >= 3) {
                sb.append(" (").append(s.loc).append(')');
            }
        } else {
            sb.append("{\"ts_ns\":").append(ts);
            sb.append(",\"thread\":");
            str(sb, t.thread.getName(), 1 << 16);
            sb.append(",\"tid\":").append(t.tid());
            sb.append(",\"rule\":");
            str(sb, s.rule, 1 << 16);
            sb.append(",\"event\":\"").append(WHERE[where]).append('"');
            sb.append(",\"class\":");
            str(sb, s.cls, 1 << 16);
            sb.append(",\"method\":");
            str(sb, s.method, 1 << 16);
            sb.append(",\"desc\":");
            str(sb, s.desc, 1 << 16);
            if (where >= 3) {
                sb.append(",\"location\":");
                str(sb, s.loc, 1 << 16);
            }
        }
        if (dur >= 0) {
            key(sb, "dur_ns", text).append(dur);
        }
        if (args != null && (s.mask & M_ARGS) != 0) {
            key(sb, "args", text);
            int a0 = sb.length();
            appendArgs(sb, args, s, true);
            t.lastArgs = sb.substring(a0);
        }
        if (where == 1 && (s.mask & M_RET) != 0 && (s.mask & M_VOID) == 0) {
            key(sb, "ret", text);
            value(sb, ret, s, true);
        }
        if (where == 2 && (s.mask & M_EXC) != 0 && e != null) {
            key(sb, "exception", text);
            String m = null;
            if ((s.mask & M_TOSTRING) != 0) {
                try {
                    m = e.getMessage();
                } catch (Throwable ignored) {
                    // a failing getMessage() leaves the class name
                }
            }
            // the class name whole, only the message cut to max_string
            sb.append('"');
            chars(sb, e.getClass().getName(), 1 << 16);
            if (m != null) {
                sb.append(": ");
                chars(sb, m, s.maxStr);
            }
            sb.append('"');
        }
        if (s.stack > 0) {
            // the frames asked for, not the thread's whole stack (new Throwable().getStackTrace()
            // cost in proportion to the thread's depth): T.apply
            key(sb, "stack", text).append('[');
            t.walkTo = sb;
            t.walkFrames = s.stack;
            try {
                WALKER.walk(t);
            } finally {
                t.walkTo = null;
            }
            sb.append(']');
        }
        sb.append(text ? "\n" : "}\n");
        return sb.toString();
    }

    /** The next field: `,"name":` (JSON lines) or ` name=` (text). */
    static StringBuilder key(StringBuilder sb, String name, boolean text) {
        if (text) {
            return sb.append(' ').append(name).append('=');
        }
        return sb.append(",\"").append(name).append("\":");
    }

    /**
     * The arguments (see newArgs: the last element is none); toString() of objects with the
     * rule's `tostring` when {@code call} (an event), never else.
     */
    static void appendArgs(StringBuilder sb, Object[] args, Site s, boolean call) {
        sb.append('[');
        for (int i = 0; i < args.length - 1; i++) {
            if (i > 0) {
                sb.append(',');
            }
            value(sb, argument(args, i), s, call);
        }
        sb.append(']');
    }

    /** Primitives (boxed) as values, strings truncated, other objects as class@identityHash. */
    static void value(StringBuilder sb, Object v, Site s, boolean call) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof Integer || v instanceof Long || v instanceof Short
                || v instanceof Byte || v instanceof Boolean) {
            sb.append(v.toString());
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                sb.append('"').append(v.toString()).append('"');
            } else {
                sb.append(v.toString());
            }
        } else if (v instanceof Character) {
            str(sb, v.toString(), 1 << 16);
        } else if (v instanceof String) {
            str(sb, (String) v, s.maxStr);
        } else if (v instanceof Enum) {
            // the enum's class, not a constant's body class (Op$1.PLUS)
            Enum<?> en = (Enum<?>) v;
            str(sb, en.getDeclaringClass().getName() + "." + en.name(), 1 << 16);
        } else if (call && (s.mask & M_TOSTRING) != 0) {
            String x;
            try {
                x = String.valueOf(v.toString());
            } catch (Throwable e) {
                x = ident(v) + " (toString threw " + e.getClass().getName() + ")";
            }
            str(sb, x, s.maxStr);
        } else {
            str(sb, ident(v), 1 << 16);
        }
    }

    /** A name on one line (a thread's name may hold line breaks): control characters as spaces. */
    static String oneLine(String v) {
        for (int i = 0; i < v.length(); i++) {
            if (v.charAt(i) < ' ') {
                char[] c = v.toCharArray();
                for (int k = i; k < c.length; k++) {
                    if (c[k] < ' ') {
                        c[k] = ' ';
                    }
                }
                return new String(c);
            }
        }
        return v;
    }

    static String ident(Object v) {
        return v.getClass().getName() + "@" + Integer.toHexString(System.identityHashCode(v));
    }

    /** A JSON string of at most max characters ("..." appended when cut). */
    static void str(StringBuilder sb, String v, int max) {
        sb.append('"');
        chars(sb, v, max);
        sb.append('"');
    }

    /**
     * The inside of a JSON string: v escaped, cut to max characters ("..." appended when cut;
     * never between the two halves of a surrogate pair: one character fewer then). A lone
     * surrogate (no UTF-8 for it) is written as a \\uXXXX escape.
     */
    static void chars(StringBuilder sb, String v, int max) {
        int n = Math.min(v.length(), max);
        if (n < v.length() && n > 0 && Character.isHighSurrogate(v.charAt(n - 1))
                && Character.isLowSurrogate(v.charAt(n))) {
            n--;
        }
        for (int i = 0; i < n; i++) {
            char c = v.charAt(i);
            if (Character.isSurrogate(c)) {
                if (Character.isHighSurrogate(c) && i + 1 < n
                        && Character.isLowSurrogate(v.charAt(i + 1))) {
                    sb.append(c).append(v.charAt(++i));
                } else {
                    sb.append("\\u");
                    for (int k = 12; k >= 0; k -= 4) {
                        sb.append(Character.forDigit((c >> k) & 15, 16));
                    }
                }
                continue;
            }
            switch (c) {
                case '"':
                    sb.append("\\\"");
                    break;
                case '\\':
                    sb.append("\\\\");
                    break;
                case '\n':
                    sb.append("\\n");
                    break;
                case '\r':
                    sb.append("\\r");
                    break;
                case '\t':
                    sb.append("\\t");
                    break;
                default:
                    if (c < 0x20) {
                        sb.append("\\u00");
                        sb.append(Character.forDigit(c >> 4, 16)).append(Character.forDigit(c & 15, 16));
                    } else {
                        sb.append(c);
                    }
            }
        }
        if (v.length() > max) {
            sb.append("...");
        }
    }

    /** At VM exit: writes the remaining events and returns the per-rule summary table. */
    public static String finish() {
        on = false;
        synchronized (Q) {
            stopping = true;
            Q.notifyAll();
        }
        // the rest of the buffer, on this thread (not profiled: see pause)
        Object p = pause();
        try {
            drainAll();
            // what probes still running on other threads (daemon threads) make from now on,
            // or left in the buffer, is counted as not written: before, such an event was in
            // no number of the summary (a counted call short of its entry event)
            synchronized (Q) {
                closed = true;
                for (; qlen > 0; qlen--) {
                    if (!isMarker(queue[qhead])) {
                        late++;
                    }
                    queue[qhead] = null;
                    qhead = (qhead + 1) % queue.length;
                }
            }
            return summary("final, at exit");
        } finally {
            resume(p);
        }
    }

    /**
     * SIGQUIT (the agent's DataDumpRequest): writes the buffered events, flushes the trace
     * file and returns the summary so far; recording goes on.
     */
    public static String dump() {
        // the runtime's own work: a rule on a JDK method the summary uses (java.util.Formatter)
        // records nothing of it (recording goes on, on other threads), nor does cpu=times
        Object p = pause();
        T t = null;
        try {
            t = cur();
        } catch (Throwable x) {
            // no state: nothing to mark
        }
        boolean was = t != null && t.busy;
        if (t != null) {
            t.busy = true;
        }
        try {
            drainAll();
            return summary("snapshot at SIGQUIT, " + java.time.Instant.now()
                    + ", recording goes on");
        } finally {
            if (t != null) {
                t.busy = was;
            }
            resume(p);
        }
    }

    /**
     * Runs, once at start with stack to spare, what the probes run, so that every class they
     * use is initialized: a class initializer that fails for lack of stack (a probe in the
     * deepest frame of a recursion to StackOverflowError) leaves its class unusable for the
     * rest of the run, the program's uses of it included (java.lang.Long was). Writes nothing.
     */
    static void warm() {
        Site s = parse("r\tC\tm\t(I)V\tline 1\t" + (M_TRACE | M_ARGS | M_RET | M_EXC | M_TOSTRING)
                + "\t0\t1\t1\t4");
        T t;
        try {
            t = T.of(Thread.currentThread(), 0);
            Frame.of(t, 0);
        } catch (CloneNotSupportedException e) {
            throw new IllegalStateException(e);
        }
        t.st(0);
        Object[] a = newArgs0(18);
        arg(a, 0, 1);
        arg(a, 1, 1000);
        arg(a, 2, 1L);
        arg(a, 3, 1000L);
        arg(a, 4, 1.5f);
        arg(a, 5, 1.5);
        arg(a, 6, true);
        arg(a, 7, (byte) 1);
        arg(a, 8, 'c');
        arg(a, 9, (char) 1000);
        arg(a, 10, (short) 1);
        arg(a, 11, (short) 1000);
        arg(a, 12, "a\"\\\n\r\t\u0001\u00e9\u20ac\ud83d\ude00\ud800");
        arg(a, 13, Thread.State.NEW);
        arg(a, 14, Double.NaN);
        arg(a, 15, Float.NEGATIVE_INFINITY);
        arg(a, 16, new Object());
        arg(a, 17, new int[0]);
        Throwable e = new IllegalStateException("m");
        for (int k = 0; k < 2; k++) {
            format(t, s, 3, 1, -1, a, null, null, k == 0);
            format(t, s, 1, 1, 1, a, Long.valueOf(1), null, k == 0);
            format(t, s, 2, 1, 1, a, null, e, k == 0);
            s.mask &= ~M_TOSTRING;
        }
        oneLine("a\nb");
        isMarker(marker(1));
        for (char k : new char[] {'I', 'J', 'F', 'D', 'B', 'C', 'S'}) {
            box(1, k);
        }
        slowest(t, s, 0, 1, a, true);
        slowest(t, s, 0, 2, a, false);
    }

    /** newArgs whether or not recording is on (warm runs before it is). */
    static Object[] newArgs0(int n) {
        return new Object[n + 1];
    }

    /**
     * The calls of rule {@code rix} still running on thread {@code t} at {@code now}, timed at
     * an end: adds to {@code open[0]} the time so far of the outermost ones (no enclosing frame
     * of the rule on the thread; the program's time, as an exit measures it) and to
     * {@code open[1]} how many there are. Another thread's stack is read as it is (a
     * snapshot: a frame being pushed or popped meanwhile may be off).
     */
    static void running(T t, Site[] ss, int rix, long now, long[] open) {
        Frame[] fs = t.frames;
        int depth = Math.min(t.depth, fs.length);
        long work = t.work;
        for (int d = 0; d < depth; d++) {
            Frame f = fs[d];
            if (f == null || f.id < 0 || f.id >= ss.length) {
                continue;
            }
            Site s = ss[f.id];
            if (s == null || s.rix != rix || (s.mask & (M_EXIT | M_EXCEPTION)) == 0) {
                continue;
            }
            open[1]++;
            if (f.up == 0) {
                open[0] += Math.max(0, now - f.start - (work - f.w));
            }
        }
    }

    /** The per-rule summary; {@code what}: final, or a snapshot (and when). */
    static String summary(String what) {
        long now = System.nanoTime();
        StringBuilder sb = new StringBuilder();
        sb.append("TRACE SUMMARY (").append(what)
                .append("; times in microseconds; total counts a recursion once; self = total minus traced callees)\n");
        // the name column fits the longest rule name (24 at least), so that the columns stay
        // aligned
        int nw = 24;
        for (String rule : ruleNames) {
            nw = Math.max(nw, rule.length());
        }
        String name = "%-" + nw + "s";
        sb.append(String.format(name + " %12s %12s %12s %10s %10s %10s%n", "rule", "count",
                "total", "self", "min", "avg", "max"));
        T[] ts;
        int nt;
        Site[] ss;
        synchronized (SITES) {
            ts = threads;
            nt = nthreads;
            ss = sites;
        }
        for (String rule : ruleNames) {
            long cnt = 0, timed = 0, total = 0, sum = 0, self = 0, min = Long.MAX_VALUE, max = 0;
            int nsites = 0;
            int rix = -1;
            long[] slowD = new long[SLOWEST];
            String[] slowS = new String[SLOWEST];
            for (int id = 0; id < ss.length; id++) {
                Site s = ss[id];
                if (s == null || !s.rule.equals(rule)) {
                    continue;
                }
                nsites++;
                rix = s.rix;
                for (int k = 0; k < nt; k++) {
                    T t = ts[k];
                    long[] st = t.st;
                    if ((id + 1) * W > st.length) {
                        continue;
                    }
                    int b = id * W;
                    cnt += st[b + CNT];
                    timed += st[b + TIMED];
                    sum += st[b + SUM];
                    self += st[b + SELF];
                    min = Math.min(min, st[b + MIN]);
                    max = Math.max(max, st[b + MAX]);
                    for (int i = id * SLOWEST; i < (id + 1) * SLOWEST && i < t.slowDur.length; i++) {
                        long d = t.slowDur[i];
                        if (d <= 0 || t.slowDesc[i] == null) {
                            continue;
                        }
                        int low = 0;
                        for (int j = 1; j < slowD.length; j++) {
                            if (slowD[j] < slowD[low]) {
                                low = j;
                            }
                        }
                        if (d > slowD[low]) {
                            slowD[low] = d;
                            slowS[low] = t.slowDesc[i];
                        }
                    }
                }
            }
            if (nsites == 0) {
                sb.append(String.format(name + " %12s%n", rule, "- (no method ran)"));
                continue;
            }
            // the rule's calls still running (System.exit inside one, a SIGQUIT while a loop
            // runs): the outermost ones count in the total up to now, read after the ended
            // calls' self times (each ended call's self is in an outermost call, ended or
            // running). Before, their time was in no number: total 0 with self in seconds.
            long[] open = new long[2];
            for (int k = 0; k < nt; k++) {
                running(ts[k], ss, rix, now, open);
            }
            total += open[0];
            for (int k = 0; k < nt; k++) {
                long[] rs = ts[k].rs;
                if ((rix + 1) * RW <= rs.length) {
                    total += rs[rix * RW + R_TOTAL];
                }
            }
            String still = open[1] == 0 ? "" : String.format("    still running: %d call%s (the total "
                    + "counts %s up to this summary; self, min, avg and max only calls that ended)%n",
                    open[1], open[1] == 1 ? "" : "s", open[1] == 1 ? "it" : "them");
            if (timed == 0 && open[1] == 0) {
                sb.append(String.format(name + " %12d%n", rule, cnt));
                continue;
            }
            if (timed == 0) {
                // every call still running: its total so far, the rest only of ended calls
                sb.append(String.format(name + " %12d %12.1f %12s %10s %10s %10s%n", rule, cnt,
                        total / 1e3, "-", "-", "-", "-")).append(still);
                continue;
            }
            sb.append(String.format(name + " %12d %12.1f %12.1f %10.1f %10.1f %10.1f%n", rule, cnt,
                    total / 1e3, self / 1e3, min / 1e3, sum / 1e3 / timed, max / 1e3));
            for (int r = 0; r < slowD.length; r++) {
                int best = -1;
                for (int j = 0; j < slowD.length; j++) {
                    if (slowS[j] != null && (best < 0 || slowD[j] > slowD[best])) {
                        best = j;
                    }
                }
                if (best < 0) {
                    break;
                }
                sb.append(String.format("    slowest %10.1f  %s%n", slowD[best] / 1e3, slowS[best]));
                slowS[best] = null;
            }
            sb.append(still);
        }
        long d, w, x, f = 0, e, l;
        synchronized (Q) {
            d = dropped;
            x = overLimit;
            e = qLostErr;
            l = late;
        }
        for (int k = 0; k < nt; k++) {
            x += ts[k].over;
            f += ts[k].failed;
            e += ts[k].lostErr;
        }
        synchronized (Trace.class) {
            w = written;
            e += lostErr;
        }
        if (outPath != null) {
            sb.append("trace events: ").append(w).append(" written to ").append(outPath)
                    .append(", ").append(d).append(" dropped (buffer full)");
            if (x > 0) {
                sb.append(", ").append(x).append(" not written (the file reached tracemax=")
                        .append(maxBytes).append(" bytes)");
            }
            if (e > 0) {
                sb.append(", ").append(e).append(" not written (write error)");
            }
            if (l > 0) {
                sb.append(", ").append(l)
                        .append(" not written (made after the final flush, as the program exited)");
            }
            if (f > 0) {
                sb.append(", ").append(f)
                        .append(" could not be made (the thread was out of stack or memory)");
            }
            if (outRegular && !new java.io.File(outPath).isFile()) {
                // the events went into the file opened at start, which no name reaches now
                sb.append("; ").append(outPath).append(" was deleted or replaced while the program "
                        + "ran: the events written to it are gone");
            }
            sb.append('\n');
        }
        return sb.toString();
    }
}

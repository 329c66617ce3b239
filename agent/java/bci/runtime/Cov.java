package bci.runtime;

import java.io.BufferedWriter;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.FileWriter;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Map;

/**
 * Coverage counters. Instrumented code asks once per method call for the calling thread's
 * counter array of its class (through the class's {@code bci$a}: the array {@link #own} gave
 * the thread that initialized the class, kept in the class's static finals; for other threads
 * {@code bci$b}: {@link #find}, and {@link #create} on a miss) and bumps counters in it with plain {@code long} increments: every array has one writer, so counts are exact without a lock or an atomic on the
 * path. Arrays of ended threads are folded into a shared sum (exactly: {@code isAlive()} returning
 * false orders the thread's writes before the fold), so memory follows the live threads, not
 * every thread that ever ran. Never instrumented itself.
 *
 * <p>This build finds the thread's arrays through a ThreadLocal (offline-instrumented programs,
 * no agent). Classes instrumented by {@code bci instrument --coverage} call {@link #register}
 * first thing in their {@code <clinit>}; at exit the counts are added to the data file
 * ({@code -Dbci.covfile=}, default {@code bci.cov}; {@code %p}, {@code %t} and {@code %%}
 * expanded as in {@code -Dbci.file=}: {@link Offline#expand}; the format of the Rust crate's
 * {@code coverage::data}), under a lock, so several JVMs can share one file. A file that cannot
 * be written there stops the program at the first registration (exit 2), as the agent's
 * {@code covfile=} does at start.
 *
 * <p>Per-test coverage: {@link #begin} and {@link #end} (called by a test harness, e.g. the
 * runtime jar's JUnit listener) bracket a test; what every thread counted in between is the
 * test's (threads a test starts count for it; tests that run at the same time are not told
 * apart: tests that end by name, {@link #end(String)}, after another began are recorded as
 * overlapping, said once on stderr). The counting path is unchanged: begin and end take a
 * snapshot of all counts.
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
    /**
     * The most counters a class has (the instrumenter leaves classes with more uninstrumented),
     * and the array a class gets when its own cannot be allocated (out of memory): its counts
     * are lost, the method runs on. Allocated up front (256 KB), so it is there when nothing
     * else can be allocated, and long enough for every class.
     */
    static final int MAX_COUNTERS = 32768;

    private static final long[] SINK = new long[MAX_COUNTERS];

    /** Registered classes by id: internal name, hash of the original bytes, counter count. */
    private static String[] names = new String[64];
    private static long[] hashes = new long[64];
    private static int[] sizes = new int[64];
    /** Class ids handed out (0 is never used). */
    private static int nextId = 1;
    private static final Map<String, Integer> IDS = new HashMap<>();
    private static String covfile;
    private static final long START = System.currentTimeMillis();

    /**
     * A class instrumented by {@code bci instrument --coverage} registers: its internal name,
     * the hash of its original bytes and its number of counters; returns its id (the same for
     * the same class, e.g. loaded by two class loaders).
     */
    public static synchronized int register(String name, long hash, int n) {
        if (covfile == null) {
            // properties, files and the hook with the runtime jar's permissions (a
            // SecurityManager's policy granting them to it is enough)
            Offline.privileged(Cov::start);
        }
        String key = name + '\0' + Long.toHexString(hash);
        Integer id = IDS.get(key);
        if (id != null) {
            return id;
        }
        int cid = nextId++;
        if (cid >= names.length) {
            int m = names.length * 2;
            names = java.util.Arrays.copyOf(names, m);
            hashes = java.util.Arrays.copyOf(hashes, m);
            sizes = java.util.Arrays.copyOf(sizes, m);
        }
        names[cid] = name;
        hashes[cid] = hash;
        sizes[cid] = n;
        IDS.put(key, cid);
        return cid;
    }

    /** The first registration: the data file (checked now) and the write at exit. */
    private static void start() {
        // %p, %t and %% as in -Dbci.file= and the agent's covfile= (one expansion: the
        // same start time in both paths); another % sequence stops the program here
        try {
            covfile = followLinks(Offline.expand("bci.covfile", System.getProperty("bci.covfile", "bci.cov")));
        } catch (IllegalArgumentException e) {
            System.err.println("bci: " + e.getMessage());
            Runtime.getRuntime().halt(2);
        }
        // checked now, as the agent checks covfile= at start: a path that cannot be
        // written stops the program here instead of losing the run's counts at exit
        String why = unwritable(covfile);
        if (why != null) {
            System.err.println("bci: cannot open -Dbci.covfile=" + covfile
                    + " for the coverage data: " + why);
            Runtime.getRuntime().halt(2);
        }
        // (a class first initialized by one of the program's shutdown hooks: written once
        // that hook has ended, see Offline.atExit)
        // what the write at exit uses, resolved while this class's loader still loads (a
        // server stops a web application's loader before the JVM runs the hooks)
        Offline.resolveAhead(Cov.class);
        Offline.atExit(Cov::writeAtExit, "bci coverage: write data");
    }

    /**
     * {@code path} with its symbolic links followed to the final target (a link to nothing:
     * where its target would be; up to 40, as the kernel follows them; a relative target taken
     * from its link's directory), as the agent's covfile= (outfile::follow_links): the data is
     * merged into the target under {@code <target>.lck} and renamed over it, and the link
     * stays a link.
     */
    static String followLinks(String path) {
        try {
            java.nio.file.Path p = java.nio.file.Paths.get(path);
            for (int i = 0; i < 40 && java.nio.file.Files.isSymbolicLink(p); i++) {
                java.nio.file.Path t = java.nio.file.Files.readSymbolicLink(p);
                java.nio.file.Path dir = p.getParent();
                p = t.isAbsolute() || dir == null ? t : dir.resolve(t);
            }
            return p.toString();
        } catch (java.io.IOException | RuntimeException e) {
            return path;
        }
    }

    /**
     * Why the data cannot be written to {@code path} at exit ({@code file: the OS's reason}),
     * or null if it can: the files {@link #write} makes, {@code path.lck} (created, as at exit)
     * and {@code path.tmp<pid>} in the same directory (created and removed again).
     */
    static String unwritable(String path) {
        String notFile = notRegular(path);
        if (notFile != null) {
            return notFile;
        }
        String lck = path + ".lck";
        try (RandomAccessFile f = new RandomAccessFile(lck, "rw")) {
            // opened: the lock file can be made
        } catch (IOException | SecurityException e) {
            return reason(lck, e);
        }
        File tmp = new File(path + ".tmp" + ProcessHandle.current().pid());
        try (FileOutputStream o = new FileOutputStream(tmp)) {
            // created: the data can be written next to it and renamed
        } catch (IOException | SecurityException e) {
            return reason(tmp.getPath(), e);
        }
        tmp.delete();
        return null;
    }

    /**
     * Why {@code path} cannot hold the data when it names something other than a regular file
     * (a device such as /dev/null, which the rename replaced with a file; /dev/zero, read
     * forever; a FIFO, which hung the exit), else null. Links are followed.
     */
    static String notRegular(String path) {
        File f = new File(path);
        if (f.exists() && !f.isFile()) {
            return path + ": not a regular file (the data file is read, added to and replaced by "
                    + "rename): give the path of a file";
        }
        return null;
    }

    /** {@code file: reason} from an exception opening {@code file} ("file (reason)"). */
    private static String reason(String file, Exception e) {
        String m = String.valueOf(e.getMessage());
        String head = file + " (";
        if (m.startsWith(head) && m.endsWith(")")) {
            m = m.substring(head.length(), m.length() - 1);
        }
        return file + ": " + m;
    }

    private static void writeAtExit() {
        Offline.awaitOtherThreads();
        try {
            end();
            String at = write(covfile);
            System.err.println("bci: coverage data written to " + at);
        } catch (Throwable e) {
            System.err.println("bci: cannot write coverage data to " + covfile + ": " + e);
        }
    }

    private static final byte[] MAGIC = {'B', 'C', 'I', 'C', 'O', 'V', 0, '\n'};

    /**
     * Adds this run's counts to the data file at {@code path} (created if absent), holding a
     * lock on {@code path.lck} so that JVMs sharing the file add up instead of overwriting
     * each other. A file that is not coverage data is left alone and the data goes to
     * {@code path.<pid>}. Returns where the data went.
     */
    static String write(String path) throws IOException {
        return write(path, true);
    }

    /**
     * {@link #write(String)}; {@code fallBack}: a file that is not coverage data sends the data
     * to {@code path.<pid>} (added to it: several copies of the runtime in this JVM may go
     * there), else that file is replaced.
     */
    private static String write(String path, boolean fallBack) throws IOException {
        long[][] all = snapshot();
        Map<String, long[]> counts = new HashMap<>();
        ArrayList<String> order = new ArrayList<>();
        synchronized (Cov.class) {
            for (int c = 1; c < nextId; c++) {
                long[] v = c < all.length && all[c] != null ? all[c] : new long[sizes[c]];
                String key = names[c] + '\0' + hashes[c];
                long[] prev = counts.get(key);
                if (prev == null) {
                    counts.put(key, v.clone());
                    order.add(key);
                } else {
                    add(prev, v);
                }
            }
        }
        // Per test: its counts by class key (sorted by test name when written).
        java.util.TreeMap<String, Map<String, long[]>> tests = new java.util.TreeMap<>();
        synchronized (Cov.class) {
            for (Map.Entry<String, long[][]> e : TESTS.entrySet()) {
                Map<String, long[]> tc = new HashMap<>();
                long[][] byId = e.getValue();
                for (int c = 1; c < nextId && c < byId.length; c++) {
                    if (byId[c] != null) {
                        addKey(tc, new ArrayList<>(), names[c] + '\0' + hashes[c], byId[c].clone());
                    }
                }
                tests.put(e.getKey(), tc);
            }
            for (Map.Entry<String, long[]> e : OVERLAPS.entrySet()) {
                addKey(tests.computeIfAbsent(e.getKey(), x -> new HashMap<>()), new ArrayList<>(),
                        OVERLAP_CLASS + '\0' + 0L, e.getValue().clone());
            }
        }
        File f = new File(path);
        String notFile = notRegular(path);
        if (notFile != null) {
            // (made so since the start-up check)
            throw new IOException(notFile);
        }
        // copies of the runtime in this JVM (one per class loader) write one after another:
        // the file lock excludes other JVMs only (OverlappingFileLockException in this one)
        synchronized (Offline.jvmLock("bci.covfile", path)) {
            try (RandomAccessFile lock = new RandomAccessFile(path + ".lck", "rw");
                    FileLock l = lock.getChannel().lock()) {
                ArrayList<byte[]> sessions = new ArrayList<>();
                // the file's session ids: another copy of this runtime in this JVM wrote one that
                // may be this copy's too (the same start time)
                java.util.HashSet<String> ids = new java.util.HashSet<>();
                if (f.exists() && f.length() > 0) {
                    // what is being read, and where: said when the file is not coverage data
                    Counted at = null;
                    String[] what = {"header"};
                    try (DataInputStream in = new DataInputStream(at = new Counted(new java.io.BufferedInputStream(new FileInputStream(f))))) {
                        byte[] m = new byte[8];
                        in.readFully(m);
                        if (!java.util.Arrays.equals(m, MAGIC)) {
                            // what bci report and the agent say (it said "offset 8: not bci
                            // coverage data (version 1 or 2)" of a file that is not one at all)
                            what[0] = null;
                            throw new IOException("not a bci coverage file (bad magic)");
                        }
                        int version = in.readUnsignedShort();
                        if (version != 1 && version != 2) {
                            what[0] = null;
                            throw new IOException("offset 8: bci coverage data version " + version
                                    + ", this runtime reads versions 1 and 2");
                        }
                        what[0] = "session count";
                        int ns = in.readInt();
                        what[0] = "session";
                        for (int i = 0; i < ns; i++) {
                            ByteArrayOutputStream b = new ByteArrayOutputStream();
                            DataOutputStream o = new DataOutputStream(b);
                            String id = readStr(in);
                            ids.add(id);
                            writeStr(o, id);
                            o.writeLong(in.readLong());
                            o.writeLong(in.readLong());
                            writeStr(o, readStr(in));
                            writeStr(o, readStr(in));
                            sessions.add(b.toByteArray());
                        }
                        // the file's counts are read on their own and added only once all of it
                        // parsed and agrees with this run: a file that fails partway adds nothing
                        Map<String, long[]> fileCounts = new HashMap<>();
                        ArrayList<String> fileOrder = new ArrayList<>();
                        java.util.TreeMap<String, Map<String, long[]>> fileTests = new java.util.TreeMap<>();
                        what[0] = "class count";
                        int nc = in.readInt();
                        what[0] = "class record";
                        for (int i = 0; i < nc; i++) {
                            String name = readStr(in);
                            long hash = in.readLong();
                            int n = in.readInt();
                            if (n < 0) {
                                throw new IOException("bad counter count " + n);
                            }
                            long[] v = new long[n];
                            for (int k = 0; k < n; k++) {
                                v[k] = in.readLong();
                            }
                            addKey(fileCounts, fileOrder, name + '\0' + hash, v);
                        }
                        if (version == 2) {
                            what[0] = "test count";
                            int nt = in.readInt();
                            for (int t = 0; t < nt; t++) {
                                what[0] = "test name";
                                String test = readStr(in);
                                Map<String, long[]> tc = fileTests.computeIfAbsent(test, x -> new HashMap<>());
                                what[0] = "test class count";
                                int k = in.readInt();
                                what[0] = "test class record";
                                for (int i = 0; i < k; i++) {
                                    String name = readStr(in);
                                    long hash = in.readLong();
                                    long[] v = new long[in.readInt()];
                                    for (int j = 0; j < v.length; j++) {
                                        v[j] = in.readLong();
                                    }
                                    addKey(tc, new ArrayList<>(), name + '\0' + hash, v);
                                }
                            }
                        }
                        what[0] = null;
                        // every class of the file has this run's number of counters...
                        for (String key : fileOrder) {
                            sameLength(counts, key, fileCounts.get(key));
                        }
                        for (Map.Entry<String, Map<String, long[]>> e : fileTests.entrySet()) {
                            Map<String, long[]> tc = tests.get(e.getKey());
                            if (tc != null) {
                                for (Map.Entry<String, long[]> c : e.getValue().entrySet()) {
                                    sameLength(tc, c.getKey(), c.getValue());
                                }
                            }
                        }
                        // ...so adding cannot fail halfway
                        for (String key : fileOrder) {
                            addKey(counts, order, key, fileCounts.get(key));
                        }
                        for (Map.Entry<String, Map<String, long[]>> e : fileTests.entrySet()) {
                            Map<String, long[]> tc = tests.computeIfAbsent(e.getKey(), x -> new HashMap<>());
                            for (Map.Entry<String, long[]> c : e.getValue().entrySet()) {
                                addKey(tc, new ArrayList<>(), c.getKey(), c.getValue());
                            }
                        }
                    } catch (IOException e) {
                        String other = path + "." + ProcessHandle.current().pid();
                        // an EOFException has no message: the file ends inside what was read
                        String why = e.getMessage();
                        if (what[0] != null) {
                            if (e instanceof java.io.EOFException || why == null) {
                                why = "truncated " + what[0];
                            }
                            if (at != null) {
                                why = "offset " + at.count + ": " + why;
                            }
                        }
                        if (!fallBack) {
                            // (not this JVM's: a file of an earlier process with this pid)
                            System.err.println("bci: " + path + ": " + why + "; replaced");
                            writeFile(f, new ArrayList<>(), ids, counts, order, tests);
                            return path;
                        }
                        System.err.println("bci: " + path + ": " + why + "; left as it is, data written to " + other);
                        // added to what this JVM's other copies of the runtime wrote there
                        return write(other, false);
                    }
                }
                writeFile(f, sessions, ids, counts, order, tests);
                return path;
            }
        }
    }

    /** Throws if {@code counts} has {@code key} with another number of counters than {@code v}. */
    private static void sameLength(Map<String, long[]> counts, String key, long[] v) throws IOException {
        long[] prev = counts.get(key);
        if (prev != null && prev.length != v.length) {
            throw new IOException("class " + key.substring(0, key.indexOf('\0')) + ": " + v.length
                    + " counters in the file, " + prev.length + " in this run");
        }
    }

    /** Adds counts under a class key ({@code name\0hash}); another length is malformed data. */
    private static void addKey(Map<String, long[]> counts, ArrayList<String> order, String key, long[] v)
            throws IOException {
        long[] prev = counts.get(key);
        if (prev == null) {
            counts.put(key, v);
            order.add(key);
        } else if (prev.length == v.length) {
            add(prev, v);
        } else {
            throw new IOException("class " + key.substring(0, key.indexOf('\0')) + ": " + v.length
                    + " counters in the file, " + prev.length + " in this run");
        }
    }

    private static void writeClass(DataOutputStream o, String key, long[] v) throws IOException {
        int z = key.indexOf('\0');
        writeStr(o, key.substring(0, z));
        o.writeLong(Long.parseLong(key.substring(z + 1)));
        o.writeInt(v.length);
        for (long x : v) {
            o.writeLong(x);
        }
    }

    private static void writeFile(File f, ArrayList<byte[]> sessions, java.util.Set<String> ids,
            Map<String, long[]> counts, ArrayList<String> order,
            java.util.TreeMap<String, Map<String, long[]>> tests) throws IOException {
        File tmp = new File(f.getPath() + ".tmp" + ProcessHandle.current().pid());
        try {
            writeData(tmp, sessions, ids, order, counts, tests);
        } catch (IOException | RuntimeException e) {
            // (a full disk left the empty temporary file beside the data)
            tmp.delete();
            throw e;
        }
        if (!tmp.renameTo(f)) {
            tmp.delete();
            throw new IOException("cannot replace " + f);
        }
    }

    private static void writeData(File tmp, ArrayList<byte[]> sessions, java.util.Set<String> ids,
            ArrayList<String> order, Map<String, long[]> counts,
            java.util.TreeMap<String, Map<String, long[]>> tests) throws IOException {
        try (DataOutputStream o = new DataOutputStream(new java.io.BufferedOutputStream(new FileOutputStream(tmp)))) {
            o.write(MAGIC);
            o.writeShort(tests.isEmpty() ? 1 : 2);
            o.writeInt(sessions.size() + 1);
            for (byte[] b : sessions) {
                o.write(b);
            }
            // this copy's session: another id than the file's (a copy of the runtime in
            // another class loader of this JVM may have started in the same millisecond)
            String id = hostPid();
            for (int k = 2; ids.contains(id); k++) {
                id = hostPid() + "-" + k;
            }
            writeStr(o, id);
            o.writeLong(START);
            o.writeLong(System.currentTimeMillis());
            writeStr(o, System.getProperty("java.vm.name", "") + " " + System.getProperty("java.runtime.version", ""));
            writeStr(o, System.getProperty("sun.java.command", ""));
            o.writeInt(order.size());
            for (String key : order) {
                writeClass(o, key, counts.get(key));
            }
            if (!tests.isEmpty()) {
                o.writeInt(tests.size());
                for (Map.Entry<String, Map<String, long[]>> t : tests.entrySet()) {
                    writeStr(o, t.getKey());
                    o.writeInt(t.getValue().size());
                    for (Map.Entry<String, long[]> c : t.getValue().entrySet()) {
                        writeClass(o, c.getKey(), c.getValue());
                    }
                }
            }
        }
    }

    private static String hostPid() {
        return hostName() + "-" + ProcessHandle.current().pid() + "-" + START;
    }

    /**
     * The machine's name (/proc/sys/kernel/hostname, what gethostname(2) returns), else
     * $HOSTNAME (which bash sets but does not export), else "host": the sources the agent
     * asks, in its order (coverage::host_name), so both write session ids of one form.
     */
    static String hostName() {
        try {
            String h = new String(java.nio.file.Files.readAllBytes(
                    java.nio.file.Paths.get("/proc/sys/kernel/hostname")), StandardCharsets.UTF_8).trim();
            if (!h.isEmpty()) {
                return h;
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or not readable: the environment
        }
        String h = System.getenv("HOSTNAME");
        h = h == null ? "" : h.trim();
        return h.isEmpty() ? "host" : h;
    }

    private static void writeStr(DataOutputStream o, String s) throws IOException {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        o.writeInt(b.length);
        o.write(b);
    }

    /** An input stream that counts the bytes read from it (the offset of what is wrong). */
    static final class Counted extends java.io.FilterInputStream {
        long count;

        Counted(java.io.InputStream in) {
            super(in);
        }

        @Override
        public int read() throws IOException {
            int b = super.read();
            if (b >= 0) {
                count++;
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n = super.read(b, off, len);
            if (n > 0) {
                count += n;
            }
            return n;
        }
    }

    private static String readStr(DataInputStream in) throws IOException {
        int n = in.readInt();
        if (n < 0 || n > (1 << 24)) {
            throw new IOException("bad string length " + n);
        }
        byte[] b = new byte[n];
        in.readFully(b);
        return new String(b, StandardCharsets.UTF_8);
    }

    private static void add(long[] into, long[] v) {
        for (int i = 0; i < into.length && i < v.length; i++) {
            long x = into[i] + v[i];
            into[i] = x < 0 ? Long.MAX_VALUE : x; // saturate
        }
    }

    /** A thread and its counter array of one class (immutable: read in one load). */
    static final class Last {
        final Thread thread;
        final long[] counts;

        Last(Thread t, long[] a) {
            thread = t;
            counts = a;
        }
    }

    /**
     * Per class id: the last thread that asked for its array, with that array. A program whose
     * classes run on one thread at a time finds its array here without the ThreadLocal.
     */
    private static volatile Last[] last = new Last[64];

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
     * The fast half of the lookup, called by the {@code bci$a(I)[J} method of instrumented
     * classes (interfaces of class files before version 52 call {@link #arr(int, int, int)}
     * directly): the calling thread's counters of class {@code cid}, or null when it is not
     * the thread seen last in the class (then the class calls {@link #create}; the class adds
     * one to the entry counter). At most 35 bytes of bytecode (HotSpot's MaxInlineSize), so
     * C1 inlines it as C2 does.
     */
    public static long[] find(int cid) {
        Last[] l = last;
        if (cid < l.length) {
            Last x = l[cid];
            if (x != null && x.thread == Thread.currentThread()) {
                return x.counts;
            }
        }
        return null;
    }

    /** The slow half of the lookup (see {@link #find}): {@link #arr(int, int)}. */
    public static long[] create(int cid, int n) {
        return arr(cid, n);
    }

    /**
     * Called by an instrumented class's {@code <clinit>} (after {@link #register}): the
     * initializing thread's counters of class {@code cid} (the array its lookups find, folded
     * when the thread has ended like its others), which the class keeps in its static final
     * {@code bci$s} and reaches from that thread without a lookup; null out of memory.
     */
    public static long[] own(int cid, int n) {
        long[] a = arr(cid, n);
        return a == SINK ? null : a;
    }

    /**
     * The owner a class keeps with the array {@link #own} gave it: the calling thread, or null
     * with no array (then the class's lookup never asks for the current thread).
     */
    public static Object owner(long[] a) {
        return a == null ? null : Thread.currentThread();
    }

    /**
     * The calling thread's counters of class {@code cid}, which has {@code n} counters (the
     * lookup of classes instrumented by bci before the entry counter moved into {@link
     * #arr(int, int, int)}).
     */
    public static long[] arr(int cid, int n) {
        Last[] l = last;
        if (cid < l.length) {
            Last x = l[cid];
            if (x != null && x.thread == Thread.currentThread()) {
                return x.counts;
            }
        }
        long[] a = local(cid, n);
        remember(cid, a);
        return a;
    }

    private static void remember(int cid, long[] a) {
        try {
            rememberOrFail(cid, a);
        } catch (Throwable e) {
            // out of memory: the next call looks the array up again
        }
    }

    private static void rememberOrFail(int cid, long[] a) {
        Last[] l = last;
        if (cid >= l.length) {
            synchronized (Cov.class) {
                l = last;
                if (cid >= l.length) {
                    l = java.util.Arrays.copyOf(l, Math.max(cid + 1, l.length * 2));
                    last = l;
                }
            }
        }
        l[cid] = new Last(Thread.currentThread(), a);
    }

    private static long[] local(int cid, int n) {
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

    /** The test running now (null: none) and the counts when it began. Guarded by the class lock. */
    private static String test;
    private static long[][] testBase;
    /** Per test: what was counted while it ran, by class id. Guarded by the class lock. */
    private static final Map<String, long[][]> TESTS = new HashMap<>();
    /** Per test, the times it overlapped another test (ran in parallel). Class lock. */
    private static final Map<String, long[]> OVERLAPS = new HashMap<>();
    /** The data's class record of a test's overlaps (the Rust crate's data::OVERLAP_CLASS, hash 0). */
    static final String OVERLAP_CLASS = ";overlapped";

    /**
     * Test {@code name} begins: what is counted from now until {@link #end} is also kept as the
     * test's (a test still running ends first).
     */
    public static synchronized void begin(String name) {
        String n = name == null ? "" : name;
        if (parallel) {
            overlap(n);
        }
        opened(n);
        close();
        testBase = snapshot();
        test = n;
    }

    /**
     * Test {@code name} ends (the JUnit listener's end): as {@link #end()} when it is the test
     * running, else nothing more is counted for it (another test's begin closed its window).
     * A test that began before it ended overlapped it: see {@link #closed}.
     */
    public static synchronized void end(String name) {
        String n = name == null ? "" : name;
        if (n.equals(test)) {
            close();
        }
        closed(n);
    }

    /** Tests run in parallel: see {@link #parallel}. Class lock. */
    private static boolean parallel;

    /**
     * Tests run in parallel from now on (the JUnit listener's, when the test plan is configured
     * for parallel execution or runs on more than one thread, {@code why}): code other threads
     * run during a test's window counts as the test's, not only other tests' (which {@link
     * #closed} tells) but code of no test (another class's {@code @BeforeAll}, constructors);
     * every test open now or begun later is recorded as overlapping, and it is said once on
     * stderr (as an overlap is).
     */
    public static synchronized void parallel(String why) {
        if (!parallel) {
            parallel = true;
            for (String n : openNames) {
                overlap(n);
            }
        }
        if (!overlapSaid) {
            overlapSaid = true;
            System.err.println("bci: per-test coverage: tests run in parallel (" + why + "): code other"
                + " threads run during a test (other tests, another class's @BeforeAll, test"
                + " instances' constructors) counts as its, so per-test counts are not separable;"
                + " run tests one at a time for exact per-test coverage (JUnit:"
                + " junit.jupiter.execution.parallel.enabled=false)");
        }
    }

    private static void overlap(String t) {
        long[] k = OVERLAPS.computeIfAbsent(t, x -> new long[1]);
        k[0]++;
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
     * to the one window open): recorded for each, said once on stderr.
     */
    private static void closed(String n) {
        for (int i = 0; i < openNames.length; i++) {
            if (!openNames[i].equals(n)) {
                continue;
            }
            String[] later = openLater[i];
            openNames = minus(openNames, i);
            openLater = minus(openLater, i);
            if (later.length == 0) {
                return;
            }
            overlap(n);
            for (String b : later) {
                if (!b.equals(n)) {
                    overlap(b);
                }
            }
            if (!overlapSaid) {
                overlapSaid = true;
                System.err.println("bci: per-test coverage: tests ran at the same time (" + n
                        + " ended after " + later[0] + " began): the per-test counts of tests that"
                        + " overlap are not separable; run tests one at a time for exact per-test"
                        + " coverage (JUnit: junit.jupiter.execution.parallel.enabled=false)");
            }
            return;
        }
        String said = unknownEnd(n);
        if (said != null) {
            System.err.println(said);
        }
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

    /** The running test (if any) ends: the counts since its {@link #begin} are added to it. */
    public static synchronized void end() {
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
        long[][] now = snapshot();
        long[][] base = testBase;
        long[][] sum = TESTS.get(test);
        if (sum == null || sum.length < now.length) {
            long[][] g = new long[now.length][];
            if (sum != null) {
                System.arraycopy(sum, 0, g, 0, sum.length);
            }
            sum = g;
        }
        for (int c = 0; c < now.length; c++) {
            long[] a = now[c];
            if (a == null) {
                continue;
            }
            long[] b = c < base.length ? base[c] : null;
            long[] d = null;
            for (int i = 0; i < a.length; i++) {
                long x = a[i] - (b != null && i < b.length ? b[i] : 0);
                if (x > 0) {
                    if (d == null) {
                        d = sum[c] != null && sum[c].length == a.length ? sum[c] : new long[a.length];
                    }
                    long y = d[i] + x;
                    d[i] = y < 0 ? Long.MAX_VALUE : y; // saturate
                }
            }
            if (d != null) {
                sum[c] = d;
            }
        }
        TESTS.put(test, sum);
        test = null;
        testBase = null;
    }

    static {
        // (with the runtime jar's permissions: see Offline.privileged)
        Offline.privileged(() -> {
            String out = System.getProperty("bci.cov.dump");
            if (out != null) {
                Offline.atExit(
                        () -> {
                            try {
                                dumpText(out);
                            } catch (IOException e) {
                                System.err.println("bci: cannot write " + out + ": " + e);
                            }
                        },
                        "bci-coverage-dump");
            }
        });
    }
}

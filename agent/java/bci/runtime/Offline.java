package bci.runtime;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Date;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Method ids for classes instrumented offline ({@code bci instrument}), and the standalone mode
 * of the runtime (no agent): the runtime jar ({@code bci runtime-jar OUT}) holds this class and
 * {@link Probes}.
 *
 * <p>Each instrumented class's {@code <clinit>} first calls {@link #register} with its name,
 * the hash of its original bytes and its method table, and keeps the returned base id in a
 * static final field; its probes pass base + the method's index in the class. The first call
 * switches {@link Probes} on and installs a shutdown hook ({@link #atExit}) that writes every
 * thread's data and the method table to {@code bci.data} (system property {@code bci.file}; {@code %p},
 * {@code %t} and {@code %%} expanded as in the agent's {@code file=}: {@link #expand(String, String)}), which
 * {@code bci report} turns into the agent's HPROF text. System properties: {@code bci.depth}
 * (default 4; 1 to 64, the agent's {@code depth=} range) frames per call path;
 * {@code bci.clock}: {@code sample} (default: probes read no clock, a daemon thread reads
 * every profiled thread's CPU time through ThreadMXBean every
 * {@code bci.interval} ms, default 1, and charges it to the thread's current call path; falls
 * back to wall when java.management is not there) or {@code wall} (System.nanoTime at every
 * entry and exit); {@code bci.thread}: {@code y} records the rows of each thread apart (the
 * agent's {@code thread=y}: the first {@link Probes#ROWS} threads, later ones share the row
 * "other threads"), {@code n} (default) all threads in one row. Nothing is written to stdout.
 *
 * <p>The data file is opened at the first registration (and removed again if that created it):
 * a path that cannot be written stops the program there, as the agent's {@code file=} does at
 * start, instead of losing the run's data at exit.
 */
public final class Offline {
    private Offline() {}

    /**
     * The runtime jar's {@code Premain-Class}: {@code java -javaagent:bci-runtime.jar -jar
     * app.jar} puts the jar on the system class path, which {@code -jar} ignores in {@code -cp},
     * and this does nothing more (the boot class path would hide JUnit from the per-test
     * listener the jar declares as a service, and stop every JUnit Platform launch).
     */
    public static void premain(String args) {}

    /**
     * Set by the agent (through JNI) when it defines this class next to its own Probes: ids then
     * come from the agent's method table, which names them in its report.
     */
    static boolean agent;

    /** The agent's registration (registered by the agent; never linked without it). */
    static native int agentRegister(String className, long hash, String table);

    private static boolean started;
    /** "sample" or "wall": what the data file says. */
    private static String clock = "wall";
    private static int interval = 1;
    private static Sampler sampler;
    /** clock=wall: the thread that folds ended threads' data (the sampler does it otherwise). */
    private static Thread reaper;
    /** How often ended threads are looked for, in ms. */
    static final int REAP_MS = 50;
    /** Recording here (not in an agent's runtime). */
    private static boolean standalone;
    private static String file;
    /** -Dbci.thread=y: each thread's rows apart (Probes.perThread), which the data file says. */
    private static boolean perThread;
    private static int n;
    private static String[] cls = new String[64];
    private static String[] names = new String[64];
    private static String[] descs = new String[64];
    private static String[] sources = new String[64];
    private static int[] lines = new int[64];
    private static long[] hashes = new long[64];

    /** The base of each class registered, by name and hash (see {@link #register}). */
    private static final java.util.HashMap<String, Integer> BASES = new java.util.HashMap<>();

    /**
     * Registers the methods of one class: {@code table} is {@code source\n} then
     * {@code name\ndesc\nline\n} per method (line empty when unknown). Returns the id of the
     * first; the others follow in table order. A class registered before (the same name and
     * hash: its bci$r and its &lt;clinit&gt;, or two class loaders) gets the same ids.
     */
    public static int register(String className, long hash, String table) {
        if (agent) {
            return agentRegister(className, hash, table);
        }
        synchronized (Offline.class) {
            if (!started) {
                started = true;
                privileged(Offline::start);
            }
            // the same class registers again from its <clinit> after its bci$r registered it
            // (its code ran before <clinit>, e.g. from a superclass's): the same base
            String key = className + '\0' + Long.toHexString(hash);
            Integer known = BASES.get(key);
            if (known != null) {
                return known;
            }
            if (n == 0) {
                // a base of 0 reads as "not registered yet" to the class's bci$r, which then
                // registered again at every call: id 0 is a placeholder no probe passes
                add("bci/runtime/Offline", 0, "", "(id 0: no class's base)", "()V", -1);
            }
            int base = n;
            BASES.put(key, base);
            int p = table.indexOf('\n');
            String source = p < 0 ? "" : table.substring(0, p);
            p++;
            while (p > 0 && p < table.length()) {
                int a = table.indexOf('\n', p);
                int b = a < 0 ? -1 : table.indexOf('\n', a + 1);
                int c = b < 0 ? -1 : table.indexOf('\n', b + 1);
                if (c < 0) {
                    break;
                }
                int line = -1;
                if (c > b + 1) {
                    try {
                        line = Integer.parseInt(table.substring(b + 1, c));
                    } catch (NumberFormatException e) {
                        line = -1;
                    }
                }
                add(className, hash, source, table.substring(p, a), table.substring(a + 1, b), line);
                p = c + 1;
            }
            return base;
        }
    }

    private static void add(String c, long h, String src, String name, String desc, int line) {
        if (n == cls.length) {
            int m = n * 2;
            cls = java.util.Arrays.copyOf(cls, m);
            names = java.util.Arrays.copyOf(names, m);
            descs = java.util.Arrays.copyOf(descs, m);
            sources = java.util.Arrays.copyOf(sources, m);
            lines = java.util.Arrays.copyOf(lines, m);
            hashes = java.util.Arrays.copyOf(hashes, m);
        }
        cls[n] = c;
        names[n] = name;
        descs[n] = desc;
        sources[n] = src;
        lines[n] = line;
        hashes[n] = h;
        n++;
    }

    /**
     * Runs {@code action} with the runtime jar's own permissions only, not those of the
     * program's code that called it: under a SecurityManager a policy that grants the runtime
     * jar permissions (reading its properties, shutdown hooks, threads, its data files) is
     * enough. The threads started there inherit that context: the hooks' writes are covered.
     * Public: the runtime jar's Cov may run where this class was defined by another loader
     * (see {@link #expand(String, String)}).
     */
    @SuppressWarnings("removal")
    public static void privileged(Runnable action) {
        java.security.AccessController.doPrivileged(
                (java.security.PrivilegedAction<Void>) () -> {
                    action.run();
                    return null;
                });
    }

    private static void start() {
        if (Probes.class.getClassLoader() != Offline.class.getClassLoader() || Probes.on) {
            // an agent's runtime records (and names) these calls
            return;
        }
        standalone = true;
        try {
            file = expand("bci.file", System.getProperty("bci.file", "bci.data"));
        } catch (IllegalArgumentException e) {
            fail(e.getMessage());
        }
        Probes.depth = inRange("bci.depth", 4, 1, MAX_DEPTH);
        interval = positive("bci.interval", 1);
        String want = System.getProperty("bci.clock", "sample");
        if (!want.equals("sample") && !want.equals("wall")) {
            fail("-Dbci.clock=" + want + ": expected sample or wall");
        }
        String rows = System.getProperty("bci.thread", "n");
        if (!rows.equals("y") && !rows.equals("n")) {
            fail("-Dbci.thread=" + rows + ": expected y or n");
        }
        perThread = rows.equals("y");
        Probes.perThread = perThread;
        String why = unwritable(file);
        if (why != null) {
            stop("cannot open -Dbci.file=" + file + " for the profile data: " + why);
        }
        if (want.equals("sample")) {
            try {
                // an instrumented system class loader (-Djava.system.class.loader=):
                // java.management cannot start during the VM's init, and a failed start left
                // ManagementFactory broken for the program; the sampler reads the MXBean once
                // the loader is made
                sampler = makingSystemLoader() ? Sampler.deferred(interval) : new Sampler(interval);
            } catch (Throwable e) {
                // java.management not in the module graph, or no thread CPU time: wall clock
                System.err.println("bci: clock=sample not available (" + e + "); using clock=wall");
                sampler = null;
            }
        }
        if (sampler != null) {
            clock = "sample";
            Probes.clock = 0;
            Probes.timed = false;
        } else {
            clock = "wall";
            Probes.clock = 1;
            Probes.timed = true;
        }
        Probes.start();
        if (sampler != null) {
            sampler.start();
        } else {
            reaper = new Thread(Offline::reapLoop, "bci runtime: ended threads");
            reaper.setDaemon(true);
            reaper.start();
        }
        resolveAhead(Offline.class);
        atExit(Offline::dump, "bci runtime: write data");
    }

    /**
     * Resolves now, through the class loader of {@code c}, every class that {@code c} and the
     * runtime's classes it reaches ({@code bci/runtime/}, loaded by that loader too, and linked
     * here) name in their constant pools (classes, and the descriptors of the members and
     * call sites they use) and in their members' descriptors. A server stops a web
     * application's class loader (Tomcat: the runtime jar in WEB-INF/lib) before the JVM runs
     * the shutdown hooks, and from then on that loader refuses every name, java.* included:
     * the exit hooks, which resolved classes lazily, died with NoClassDefFoundError
     * (ThreadGroup, Iterator, PrintStream, StringBuilder) and wrote nothing. The JVM asks a
     * loader for a name once (it records the loader as the name's initiating loader), so what
     * is resolved here no longer needs the loader. Fails open. Public: the runtime jar's Cov
     * may run where this class was defined by another loader (see {@link #expand}).
     */
    public static void resolveAhead(Class<?> c) {
        try {
            resolveAll(c);
        } catch (Throwable e) {
            // (out of memory: the program runs on, the write at exit may fail as before)
        }
    }

    private static void resolveAll(Class<?> c) {
        ClassLoader l = c.getClassLoader();
        if (l == null) {
            return;
        }
        java.util.ArrayDeque<String> todo = new java.util.ArrayDeque<>();
        java.util.HashSet<String> seen = new java.util.HashSet<>();
        String first = c.getName().replace('.', '/');
        todo.add(first);
        seen.add(first);
        while (!todo.isEmpty()) {
            String own = todo.poll();
            Class<?> k = load(own, l);
            if (k == null || k.getClassLoader() != l) {
                continue;
            }
            try {
                // links (verifies) it, and resolves its members' types
                k.getDeclaredMethods();
                k.getDeclaredConstructors();
                k.getDeclaredFields();
            } catch (Throwable e) {
                // a type that is not there: resolved as far as it goes
            }
            byte[] b;
            try (java.io.InputStream in = l.getResourceAsStream(own + ".class")) {
                if (in == null) {
                    continue;
                }
                b = in.readAllBytes();
            } catch (Throwable e) {
                continue;
            }
            for (String name : classNames(b)) {
                if (name.startsWith("bci/runtime/")) {
                    if (seen.add(name)) {
                        todo.add(name);
                    }
                } else {
                    load(name, l);
                }
            }
        }
    }

    /** Class {@code name} (internal form) loaded, not initialized, through {@code l}; or null. */
    private static Class<?> load(String name, ClassLoader l) {
        try {
            return Class.forName(name.replace('/', '.'), false, l);
        } catch (Throwable e) {
            return null;
        }
    }

    /**
     * The classes a class file names in its constant pool: its class entries (an array's
     * element class) and the classes in the descriptors of its NameAndType and MethodType
     * entries (the members it uses, its call sites), internal form; empty if malformed.
     */
    static java.util.Set<String> classNames(byte[] b) {
        java.util.Set<String> out = new java.util.TreeSet<>();
        try {
            java.io.DataInputStream in =
                    new java.io.DataInputStream(new java.io.ByteArrayInputStream(b));
            in.readInt();
            in.readUnsignedShort();
            in.readUnsignedShort();
            int count = in.readUnsignedShort();
            String[] utf = new String[count];
            int[] names = new int[count];
            int[] descs = new int[count];
            for (int k = 1; k < count; k++) {
                int tag = in.readUnsignedByte();
                switch (tag) {
                    case 1:
                        utf[k] = in.readUTF();
                        break;
                    case 7:
                        names[k] = in.readUnsignedShort();
                        break;
                    case 16:
                        descs[k] = in.readUnsignedShort();
                        break;
                    case 8: case 19: case 20:
                        in.readUnsignedShort();
                        break;
                    case 15:
                        in.readUnsignedByte();
                        in.readUnsignedShort();
                        break;
                    case 12:
                        in.readUnsignedShort();
                        descs[k] = in.readUnsignedShort();
                        break;
                    case 3: case 4: case 9: case 10: case 11: case 17: case 18:
                        in.readInt();
                        break;
                    case 5: case 6:
                        in.readLong();
                        k++;
                        break;
                    default:
                        return out;
                }
            }
            for (int k = 1; k < count; k++) {
                String n = names[k] > 0 ? utf[names[k]] : null;
                if (n != null) {
                    if (n.startsWith("[")) {
                        descriptorNames(n, out);
                    } else {
                        out.add(n);
                    }
                }
                if (descs[k] > 0 && utf[descs[k]] != null) {
                    descriptorNames(utf[descs[k]], out);
                }
            }
        } catch (IOException | RuntimeException e) {
            // what was read so far
        }
        return out;
    }

    /** Adds the class names of descriptor {@code d} ({@code Lname;}) to {@code out}. */
    private static void descriptorNames(String d, java.util.Set<String> out) {
        for (int i = d.indexOf('L'); i >= 0; i = d.indexOf('L', i)) {
            int e = d.indexOf(';', i);
            if (e < 0) {
                return;
            }
            out.add(d.substring(i + 1, e));
            i = e + 1;
        }
    }

    /**
     * Runs {@code write} at exit, in a thread named {@code name}: a shutdown hook, or, when the
     * JVM shuts down already (the first instrumented class initialized by one of the program's
     * shutdown hooks, e.g. when only a library it uses at exit is instrumented:
     * Runtime.addShutdownHook throws IllegalStateException then), once the calling thread has
     * run its last code ({@link #afterThread}). Public: the runtime jar's Cov may run where this
     * class was defined by another loader (see {@link #expand(String, String)}).
     */
    public static void atExit(Runnable write, String name) {
        Thread hook = new Thread(write, name);
        try {
            Runtime.getRuntime().addShutdownHook(hook);
        } catch (IllegalStateException e) {
            afterThread(Thread.currentThread(), write, name);
        }
    }

    /** {@link #afterThread}: how long the calling thread waits for the writer, at most. */
    static final int LATE_WAIT_MS = 1000;

    /**
     * The shutdown has begun, so no hook can be added: the JVM starts the program's shutdown
     * hooks, joins each, and halts once they have all ended. {@code write} runs in a daemon
     * thread of its own that holds the monitor of {@code t} (the thread that registered: a
     * shutdown hook) until {@code t} has run its last code: a thread that ends takes its own
     * monitor to wake the threads joining it (HotSpot's ensure_join), so {@code t}'s end, and
     * with it the halt, waits for the write. {@code t} goes on once the writer holds its
     * monitor ({@link #LATE_WAIT_MS} at most). A thread the JVM does not join (not a shutdown
     * hook: a thread still running when System.exit was called) may be cut off by the halt
     * before the write, which the README says.
     */
    private static void afterThread(Thread t, Runnable write, String name) {
        boolean[] held = {false};
        Thread w = new Thread(() -> {
            synchronized (t) {
                synchronized (held) {
                    held[0] = true;
                    held.notifyAll();
                }
                awaitEnd(t);
                write.run();
            }
        }, name);
        w.setDaemon(true);
        w.start();
        long end = System.nanoTime() + LATE_WAIT_MS * 1_000_000L;
        synchronized (held) {
            while (!held[0]) {
                long left = (end - System.nanoTime()) / 1_000_000L;
                if (left <= 0) {
                    return;
                }
                try {
                    held.wait(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    /**
     * Returns once {@code t} (whose monitor the caller holds) has run its last code: it is
     * blocked with no frame left (taking its monitor to end), or it has ended. While {@code t}
     * is blocked in its own code (perhaps on this monitor: a program synchronizing on its hook's
     * Thread) the monitor is let go for a moment.
     */
    private static void awaitEnd(Thread t) {
        try {
            while (t.isAlive()) {
                if (exiting(t)) {
                    return;
                }
                if (t.getState() == Thread.State.BLOCKED) {
                    t.wait(1);
                } else {
                    Thread.sleep(1);
                }
            }
        } catch (InterruptedException e) {
            // write what there is
        }
    }

    /** Whether {@code t} has run its last code: blocked with no frame (see {@link #awaitEnd}). */
    private static boolean exiting(Thread t) {
        return t.getState() == Thread.State.BLOCKED && t.getStackTrace().length == 0;
    }

    /**
     * Whether the system class loader is being made (an instrumented class initialized by the
     * loader of {@code -Djava.system.class.loader=}, during the VM's init): then
     * ClassLoader.getSystemClassLoader() throws IllegalStateException.
     */
    static boolean makingSystemLoader() {
        try {
            ClassLoader.getSystemClassLoader();
            return false;
        } catch (IllegalStateException e) {
            return true;
        } catch (RuntimeException e) {
            return false;
        }
    }

    /**
     * The value of the path property {@code -Dname=} with {@code %p} replaced by the process
     * id, {@code %t} by the JVM's start time (UTC, {@code YYYY-MM-DD_HH-MM-SS}) and {@code %%}
     * by {@code %}, as the agent's {@code file=} and {@code covfile=} (outfile::expand): for
     * {@code -Dbci.file=} here and {@code -Dbci.covfile=} in {@link Cov} (public: under an
     * agent that defines this class in the boot loader, the runtime jar's Cov on the class path
     * calls that copy, and a package-private method of another class loader's package is not
     * accessible). Any other {@code %} sequence, a {@code %} at the end included, throws
     * IllegalArgumentException with {@code -Dname=value: unknown '%x' (valid: ...)}: the
     * caller stops the program with it.
     */
    public static String expand(String name, String pattern) {
        if (pattern.indexOf('%') < 0) {
            return pattern;
        }
        StringBuilder sb = new StringBuilder(pattern.length() + 16);
        for (int i = 0; i < pattern.length(); i++) {
            char c = pattern.charAt(i);
            if (c != '%') {
                sb.append(c);
                continue;
            }
            char d = i + 1 < pattern.length() ? pattern.charAt(++i) : 0;
            if (d == 'p') {
                sb.append(ProcessHandle.current().pid());
            } else if (d == 't') {
                sb.append(utcStamp(startSeconds()));
            } else if (d == '%') {
                sb.append('%');
            } else {
                throw new IllegalArgumentException("-D" + name + "=" + pattern + ": unknown '%"
                        + (d == 0 ? "" : String.valueOf(d))
                        + "' (valid: %p = process id, %t = start time, %% = %)");
            }
        }
        return sb.toString();
    }

    /** When the JVM started (seconds since the epoch); now if the OS does not say. */
    private static long startSeconds() {
        try {
            java.util.Optional<java.time.Instant> t = ProcessHandle.current().info().startInstant();
            if (t.isPresent()) {
                return t.get().getEpochSecond();
            }
        } catch (RuntimeException e) {
            // not supported here: now
        }
        return System.currentTimeMillis() / 1000;
    }

    /**
     * {@code YYYY-MM-DD_HH-MM-SS} in UTC (the agent's outfile::utc_stamp: H. Hinnant's
     * civil_from_days).
     */
    static String utcStamp(long secs) {
        long days = Math.floorDiv(secs, 86_400L);
        long rem = Math.floorMod(secs, 86_400L);
        long z = days + 719_468;
        long era = Math.floorDiv(z, 146_097L);
        long doe = z - era * 146_097;
        long yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        long mp = (5 * doy + 2) / 153;
        long d = doy - (153 * mp + 2) / 5 + 1;
        long m = mp < 10 ? mp + 3 : mp - 9;
        long y = yoe + era * 400 + (m <= 2 ? 1 : 0);
        StringBuilder sb = new StringBuilder(19);
        pad(sb, y, 4).append('-');
        pad(sb, m, 2).append('-');
        pad(sb, d, 2).append('_');
        pad(sb, rem / 3600, 2).append('-');
        pad(sb, rem / 60 % 60, 2).append('-');
        return pad(sb, rem % 60, 2).toString();
    }

    private static StringBuilder pad(StringBuilder sb, long v, int width) {
        String s = Long.toString(v);
        for (int i = s.length(); i < width; i++) {
            sb.append('0');
        }
        return sb.append(s);
    }

    /** A bad option stops the program at its first instrumented class, saying which. */
    private static void fail(String msg) {
        stop(msg + " (runtime options: -Dbci.file=PATH, -Dbci.depth=N, "
                + "-Dbci.clock=sample|wall, -Dbci.interval=MS, -Dbci.thread=y|n)");
    }

    /** Stops the program (exit status 2) before it runs unprofiled or loses its data at exit. */
    private static void stop(String msg) {
        System.err.println("bci: " + msg);
        Runtime.getRuntime().halt(2);
    }

    /**
     * Why {@code path} cannot be written (the OS's reason), or null if it can: opened for
     * appending (what it holds is kept until the write at exit replaces it), created if absent
     * and then removed again, so that a run killed before its exit leaves no empty data file.
     */
    static String unwritable(String path) {
        java.io.File f = new java.io.File(path);
        boolean existed = f.exists();
        try (FileOutputStream o = new FileOutputStream(f, true)) {
            // opened: writable
        } catch (IOException | SecurityException e) {
            String m = String.valueOf(e.getMessage());
            // FileNotFoundException: "<path> (<reason>)"
            String head = path + " (";
            return m.startsWith(head) && m.endsWith(")")
                    ? m.substring(head.length(), m.length() - 1)
                    : m;
        }
        if (!existed) {
            f.delete();
        }
        return null;
    }

    /** The deepest call path recorded: the agent's {@code depth=} range (options::MAX_DEPTH). */
    static final int MAX_DEPTH = 64;

    /** {@code -Dprop=}, an integer from {@code min} to {@code max}; {@code dflt} if not given. */
    private static int inRange(String prop, int dflt, int min, int max) {
        String v = System.getProperty(prop);
        if (v == null) {
            return dflt;
        }
        try {
            int n = Integer.parseInt(v.trim());
            if (n >= min && n <= max) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        fail("-D" + prop + "=" + v + ": expected a positive integer from " + min + " to " + max);
        return dflt;
    }

    private static int positive(String prop, int dflt) {
        String v = System.getProperty(prop);
        if (v == null) {
            return dflt;
        }
        try {
            int n = Integer.parseInt(v.trim());
            if (n > 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        fail("-D" + prop + "=" + v + ": expected a positive integer");
        return dflt;
    }

    private static String clean(String s) {
        return s == null ? "" : s.replace('\t', ' ').replace('\n', ' ').replace('\r', ' ');
    }

    /**
     * Folds the data of the threads that ended since the last call into the shared aggregate
     * and frees their states ({@link Probes#ended}, what the agent does on JVMTI's ThreadEnd):
     * offline nothing reports a thread's end, so without this every thread a program ever
     * started kept its state and its Thread object until exit (20,000 short threads: 22-36 MB
     * of heap against 4 MB bare). Thread.isAlive() false happens-after everything the thread
     * did (JLS 17.4.4), so its counts are read whole.
     */
    static void reap() {
        Thread[] dead = null;
        int nd = 0;
        synchronized (Probes.class) {
            Probes.Slots l = Probes.live;
            for (int i = 0; i < l.n; i++) {
                Probes.T st = l.a[i];
                Thread t = st == null ? null : st.thread;
                if (t != null && !t.isAlive()) {
                    if (dead == null) {
                        dead = new Thread[16];
                    } else if (nd == dead.length) {
                        dead = java.util.Arrays.copyOf(dead, nd * 2);
                    }
                    dead[nd++] = t;
                }
            }
        }
        for (int i = 0; i < nd; i++) {
            Probes.ended(dead[i]);
        }
    }

    /**
     * Sleeps {@code ms}; an interrupt cuts the sleep short and nothing more: the runtime's
     * threads are visible to the program (Thread.getAllStackTraces), and code that interrupts
     * every thread it sees ended the sampler, whose samples then stopped (times lost).
     */
    static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            // not the runtime's to stop on: only `running` (or the JVM's end) stops its threads
        }
    }

    private static void reapLoop() {
        for (;;) {
            pause(REAP_MS);
            reap();
        }
    }

    /** {@link #awaitOtherThreads}: how long no other thread may progress before it returns. */
    static final int IDLE_MS = 100;
    /** {@link #awaitOtherThreads}: the longest it waits. */
    static final int HOOK_WAIT_MS = 5000;

    /**
     * Called by the runtime's shutdown hooks (this class's and {@link Cov}'s) before they read
     * the data: waits for the program's threads that still run. The JVM starts every shutdown
     * hook at once and halts when the last one ends, so the work of the program's own hooks
     * (closing, flushing, a framework's shutdown) was counted only if it happened to run
     * before the data was read. Waited for: live threads that are not daemons, other than
     * the caller and the thread running the shutdown (the caller of System.exit, or
     * DestroyJavaVM). It returns when none is left, when none has made progress (its CPU time,
     * where ThreadMXBean gives it, or its stack) for {@link #IDLE_MS} (an idle pool worker or a
     * thread blocked in accept: the JVM does not wait for those), or after
     * {@link #HOOK_WAIT_MS} at most. Public: the runtime jar's Cov may run where this class
     * was defined by another loader (see {@link #expand(String, String)}).
     */
    public static void awaitOtherThreads() {
        try {
            awaitOthers();
        } catch (Throwable e) {
            // fail open: the data is written as it is
        }
    }

    private static void awaitOthers() throws InterruptedException {
        Thread self = Thread.currentThread();
        long start = System.nanoTime();
        long limit = HOOK_WAIT_MS * 1_000_000L;
        // 1. The thread running the shutdown starts every hook before it joins the first: until
        // it waits in join() more hook threads are to come, and a list of the live threads
        // taken before would miss them.
        while (startingHooks(self)) {
            if (System.nanoTime() - start >= limit) {
                return;
            }
            Thread.sleep(1);
        }
        // 2. The other threads, until none is left or none progresses.
        long progressAt = System.nanoTime();
        Map<Thread, StackTraceElement[]> stacks = new HashMap<>();
        Map<Thread, Long> cpu = new HashMap<>();
        CpuTimes times = null;
        boolean triedTimes = false;
        while (true) {
            boolean any = false;
            boolean progress = false;
            for (Thread t : liveThreads()) {
                if (t == self || t.isDaemon() || !t.isAlive()) {
                    continue;
                }
                StackTraceElement[] st = t.getStackTrace();
                if (frame(st, "java.lang.Shutdown", null) >= 0) {
                    continue; // the caller of System.exit, or DestroyJavaVM
                }
                if (st.length == 0 && t.getState() == Thread.State.BLOCKED) {
                    continue; // past its last code, held by a late writer (afterThread)
                }
                if (!triedTimes) {
                    triedTimes = true;
                    times = CpuTimes.make();
                }
                any = true;
                StackTraceElement[] before = stacks.put(t, st);
                if (before == null || !Arrays.equals(before, st)) {
                    progress = true;
                }
                if (times != null) {
                    long c = times.of(t);
                    Long was = cpu.put(t, c);
                    if (was == null || c > was) {
                        progress = true;
                    }
                }
            }
            long now = System.nanoTime();
            if (!any) {
                return;
            }
            if (progress) {
                progressAt = now;
            }
            if (now - progressAt >= IDLE_MS * 1_000_000L || now - start >= limit) {
                return;
            }
            Thread.sleep(5);
        }
    }

    /**
     * Whether a thread (other than {@code self}) runs the application's shutdown hooks and has
     * not yet started them all: it is in ApplicationShutdownHooks.runHooks but not in join().
     */
    private static boolean startingHooks(Thread self) {
        for (Thread t : liveThreads()) {
            if (t == self) {
                continue;
            }
            StackTraceElement[] st = t.getStackTrace();
            int hooks = frame(st, "java.lang.ApplicationShutdownHooks", "runHooks");
            if (hooks >= 0) {
                for (int i = 0; i < hooks; i++) {
                    if ("java.lang.Thread".equals(st[i].getClassName())
                            && st[i].getMethodName().equals("join")) {
                        return false;
                    }
                }
                return true;
            }
        }
        return false;
    }

    /** The live threads of the root thread group (platform threads). */
    private static Thread[] liveThreads() {
        ThreadGroup g = Thread.currentThread().getThreadGroup();
        while (g.getParent() != null) {
            g = g.getParent();
        }
        Thread[] all = new Thread[g.activeCount() + 16];
        int n;
        while ((n = g.enumerate(all, true)) == all.length) {
            all = new Thread[all.length * 2];
        }
        return Arrays.copyOf(all, n);
    }

    /** The index of the first frame of {@code cls}.{@code method} (any method if null), or -1. */
    private static int frame(StackTraceElement[] st, String cls, String method) {
        for (int i = 0; i < st.length; i++) {
            if (cls.equals(st[i].getClassName())
                    && (method == null || method.equals(st[i].getMethodName()))) {
                return i;
            }
        }
        return -1;
    }

    /**
     * Threads' CPU times through ThreadMXBean: its own class, so that a program without
     * java.management fails in {@link #make} (caught: null) and not in Offline.
     */
    private static final class CpuTimes {
        private final java.lang.management.ThreadMXBean mx;

        private CpuTimes(java.lang.management.ThreadMXBean mx) {
            this.mx = mx;
        }

        static CpuTimes make() {
            try {
                java.lang.management.ThreadMXBean mx =
                        java.lang.management.ManagementFactory.getThreadMXBean();
                return mx.isThreadCpuTimeSupported() ? new CpuTimes(mx) : null;
            } catch (Throwable e) {
                return null;
            }
        }

        @SuppressWarnings("deprecation")
        long of(Thread t) {
            return mx.getThreadCpuTime(t.getId());
        }
    }

    /**
     * Writes the data file (shutdown hook). The snapshot comes first, before any work of the
     * dump's own: with clock=wall it charges the frames still open (System.exit from deep
     * frames: the exiting thread waits in it for this hook) up to the time it reads, and every
     * moment spent before it (the header's String.format and Date, the method table) would be
     * charged to the top open frame as self time the program never spent there (52-220 ms to
     * the frame that called System.exit, against 0.08 ms under the agent). Stopping the
     * sampler and the probes before it are two field writes.
     */
    static void dump() {
        if (!standalone) {
            return;
        }
        awaitOtherThreads();
        long at = System.currentTimeMillis();
        if (sampler != null) {
            sampler.running = false;
        }
        Probes.stop();
        // the entries are read under the runtime's lock, taken before the snapshot: they are
        // read from its aggregates as they are, not copied (see Probes.snapshot)
        StringBuilder data = new StringBuilder();
        synchronized (Probes.class) {
            int threads = Probes.snapshot();
            for (int i = 0; i < threads; i++) {
                long[] d = Probes.export(i);
                if (d == null) {
                    continue;
                }
                data.append("thread\t").append(clean(Probes.threadName(i))).append('\n');
                data.append("data");
                for (long v : d) {
                    data.append('\t').append(v);
                }
                data.append('\n');
            }
            Probes.dumped();
        }
        StringBuilder sb = new StringBuilder();
        sb.append("bci-data\t1\n");
        sb.append("clock\t").append(clock).append('\n');
        sb.append("interval\t").append(interval).append('\n');
        sb.append("depth\t").append(Probes.depth).append('\n');
        if (perThread) {
            // only then: a report of this file defaults to thread=y, and refuses thread=y
            // without it (the threads were not recorded apart)
            sb.append("per-thread\ty\n");
        }
        sb.append("date\t")
                .append(String.format(Locale.US, "%1$ta %1$tb %1$2te %1$tT %1$tY", new Date(at)))
                .append('\n');
        // (read after the snapshot: it names every method the data counted)
        synchronized (Offline.class) {
            for (int i = 0; i < n; i++) {
                sb.append("method\t").append(i).append('\t').append(clean(cls[i])).append('\t')
                        .append(clean(names[i])).append('\t').append(clean(descs[i])).append('\t')
                        .append(clean(sources[i])).append('\t').append(lines[i]).append('\t')
                        .append(Long.toHexString(hashes[i])).append('\n');
            }
        }
        sb.append(data);
        long[] totals = Probes.sampledTotals();
        sb.append("totals");
        for (long v : totals) {
            sb.append('\t').append(v);
        }
        sb.append('\n');
        String failure = Probes.failure();
        if (failure != null) {
            sb.append("failure\t").append(clean(failure)).append('\n');
        }
        byte[] bytes = sb.toString().getBytes(StandardCharsets.UTF_8);
        String to = file;
        try {
            synchronized (jvmLock("bci.file", file)) {
                File f = new File(file);
                if (f.exists() && !f.isFile()) {
                    // a device or pipe (/dev/stdout): not locked, shared as a terminal is
                    try (FileOutputStream o = new FileOutputStream(f)) {
                        o.write(bytes);
                    }
                } else {
                    RandomAccessFile out = claim(file);
                    to = claimed;
                    out.setLength(0);
                    out.write(bytes);
                }
            }
            System.err.println("bci: profile data (clock=" + clock + ") written to " + to
                    + "; render it with: bci report " + to);
        } catch (IOException e) {
            System.err.println("bci: cannot write " + to + ": " + e);
        }
    }

    /**
     * The object this JVM's copies of the runtime (one per class loader: a web application's
     * WEB-INF/lib) synchronize on to write the data file {@code path} of property
     * {@code prop}: an interned String, one object in the whole JVM. (File locks exclude
     * JVMs, not the threads of one: a second lock of the same file in one JVM throws
     * OverlappingFileLockException.) Public: the runtime jar's Cov may run where this class
     * was defined by another loader (see {@link #expand(String, String)}).
     */
    public static Object jvmLock(String prop, String path) {
        return ("bci.runtime " + prop + " " + new File(path).getAbsolutePath()).intern();
    }

    /**
     * The files of {@link #claim}, open and locked until the JVM exits (kept here: a file
     * collected as garbage is closed, and on Linux closing any descriptor of a file drops
     * every lock this process holds on it).
     */
    private static final java.util.ArrayList<RandomAccessFile> CLAIMS = new java.util.ArrayList<>();
    /** The path {@link #claim} returned the file of. */
    private static String claimed;

    /**
     * Opens and locks the file this copy writes its profile to, kept locked until the JVM
     * exits: {@code path}, unless another JVM holds it (as the agent's {@code file=}: then
     * {@code path.<pid>}) or another copy of the runtime in this JVM wrote it (then
     * {@code path.<pid>}, {@code path.<pid>.2}, ...), said on stderr: every copy's data is
     * kept (the data file holds one run's method table: copies are not merged into it). A file
     * system without locks: written as it is. Called under {@link #jvmLock}.
     */
    private static RandomAccessFile claim(String path) throws IOException {
        String pid = String.valueOf(ProcessHandle.current().pid());
        String why = null;
        for (int k = 0; k < 100; k++) {
            String p = k == 0 ? path : k == 1 ? path + "." + pid : path + "." + pid + "." + k;
            RandomAccessFile f = new RandomAccessFile(p, "rw");
            CLAIMS.add(f);
            String busy;
            try {
                busy = f.getChannel().tryLock() != null ? null : "in use by another running JVM";
            } catch (java.nio.channels.OverlappingFileLockException e) {
                busy = "written by another copy of the runtime in this JVM (another class loader's)";
            } catch (IOException e) {
                busy = null; // no file locks here: written as it is
            }
            if (busy != null) {
                why = why == null ? busy : why;
                continue;
            }
            if (why != null) {
                System.err.println("bci: -Dbci.file=" + path + " is " + why + "; this runtime's"
                        + " profile goes to " + p + (why.endsWith("JVM")
                                ? " (use %p in -Dbci.file= for one file per JVM)" : ""));
            }
            claimed = p;
            return f;
        }
        throw new IOException("no free file from " + path + " to " + path + "." + pid + ".99");
    }

    /**
     * clock=sample without an agent: every interval, each profiled thread's CPU time
     * (ThreadMXBean) goes to {@link Probes#sample}, which charges what it used since the
     * previous sample. Its own
     * class, so that a program without java.management fails here (caught) and not in Offline.
     */
    static final class Sampler extends Thread {
        /** The MXBean; null until {@link #run} reads it when {@link #deferred}. */
        private java.lang.management.ThreadMXBean mx;
        private final int ms;
        volatile boolean running = true;

        Sampler(int ms) {
            this(ms, true);
        }

        private Sampler(int ms, boolean now) {
            super("bci runtime sampler");
            setDaemon(true);
            this.ms = ms;
            if (now) {
                mx = threadMXBean();
            }
        }

        /**
         * A sampler that reads the MXBean once the system class loader is made (see
         * {@link #makingSystemLoader}): it fails there only without java.management, checked
         * here, or without thread CPU time (said then: the data has no times).
         */
        static Sampler deferred(int ms) {
            if (!ModuleLayer.boot().findModule("java.management").isPresent()) {
                throw new UnsupportedOperationException("java.management is not in the boot layer");
            }
            return new Sampler(ms, false);
        }

        private static java.lang.management.ThreadMXBean threadMXBean() {
            java.lang.management.ThreadMXBean mx =
                    java.lang.management.ManagementFactory.getThreadMXBean();
            if (!mx.isThreadCpuTimeSupported()) {
                throw new UnsupportedOperationException("thread CPU time not supported");
            }
            if (!mx.isThreadCpuTimeEnabled()) {
                mx.setThreadCpuTimeEnabled(true);
            }
            return mx;
        }

        /** {@link #deferred}: waits for the system class loader, then reads the MXBean. */
        private boolean ready() {
            if (mx != null) {
                return true;
            }
            try {
                while (makingSystemLoader()) {
                    pause(1);
                }
                mx = threadMXBean();
                return true;
            } catch (Throwable e) {
                System.err.println("bci: clock=sample not available (" + e + "): the profile has"
                        + " counts but no times; run with -Dbci.clock=wall");
                return false;
            }
        }

        /**
         * The agent's sampler protocol ({@link Probes#sample}): per slot, the serial of the
         * thread read and its CPU time now; the runtime answers with the slots' serials when
         * they changed.
         */
        @Override
        public void run() {
            if (!ready()) {
                reapLoop();
                return;
            }
            long version = -1;
            long[] serial = new long[0];
            long[] tid = new long[0];
            int rounds = 0;
            while (running) {
                pause(ms);
                if (++rounds * ms >= REAP_MS) {
                    rounds = 0;
                    reap();
                }
                int n = serial.length;
                long[] msg = new long[1 + 2 * n];
                msg[0] = version;
                for (int i = 0; i < n; i++) {
                    // the thread's CPU time now (-1: not read); Probes.sample charges what it
                    // used since its last sample (the first one only starts its count)
                    long cpu = -1;
                    if (tid[i] >= 0) {
                        cpu = mx.getThreadCpuTime(tid[i]);
                        if (cpu < 0) {
                            tid[i] = -1; // ended
                        }
                    }
                    msg[1 + 2 * i] = serial[i];
                    msg[2 + 2 * i] = cpu;
                }
                if (!running) {
                    return;
                }
                long[] table = Probes.sample(msg);
                if (table == null || table.length == 0) {
                    continue;
                }
                version = table[0];
                int m = table.length - 1;
                long[] ns = new long[m];
                long[] nt = new long[m];
                for (int i = 0; i < m; i++) {
                    ns[i] = table[1 + i];
                    if (i < n && serial[i] == ns[i]) {
                        nt[i] = tid[i];
                        continue;
                    }
                    nt[i] = -1;
                    Thread t = ns[i] < 0 ? null : Probes.thread(i);
                    if (t != null && mx.getThreadCpuTime(t.getId()) >= 0) {
                        nt[i] = t.getId();
                    }
                }
                serial = ns;
                tid = nt;
            }
        }
    }
}

package bci.runtime;

import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.TestPlan;

/**
 * Per-test coverage under the JUnit Platform: found through ServiceLoader
 * ({@code META-INF/services/org.junit.platform.launcher.TestExecutionListener} in the runtime jar)
 * when the runtime jar is on the class path; each test runs between {@link Cov#begin} and
 * {@link Cov#end(String)} under its name ({@code package.Class#method(parameter types)}, with
 * {@code [N]} for each invocation index of a parameterized, repeated or dynamic test, or its
 * display name when it is not a method; see {@link #name}). Every test execution (unique id) of
 * the JVM gets a name of its own. Compiled against stand-ins of the JUnit types it names, so
 * the runtime jar needs no JUnit; never fails a test run (a runtime without begin/end is ignored).
 */
public final class JUnitListener implements TestExecutionListener {
    private static volatile boolean off;
    /** The runtime has no end(String) (an agent of an older bci): end() instead. */
    private static volatile boolean byName = true;
    /** The name given to each unique id, and the names given (guarded by the map). */
    private static final Map<String, String> NAMES = new HashMap<>();
    private static final Set<String> TAKEN = new HashSet<>();
    /** The running test plan: the parents of a dynamic test. */
    private volatile TestPlan plan;
    /** The thread that started the running test plan: its events on another, parallel. */
    private volatile Thread planThread;
    /** Parallel execution was told to the runtime (see {@link #parallel}). */
    private static volatile boolean parallelTold;
    /** Jupiter's key of parallel execution. */
    static final String PARALLEL_KEY = "junit.jupiter.execution.parallel.enabled";

    @Override
    public void testPlanExecutionStarted(TestPlan testPlan) {
        plan = testPlan;
        planThread = Thread.currentThread();
        if (parallelConfigured(testPlan)) {
            parallel(PARALLEL_KEY + "=true");
        }
    }

    /**
     * Whether the plan's configuration turns Jupiter's parallel execution on (JUnit Platform
     * 1.8+: TestPlan.getConfigurationParameters; false before).
     */
    private static boolean parallelConfigured(TestPlan testPlan) {
        try {
            return testPlan.getConfigurationParameters().getBoolean(PARALLEL_KEY).orElse(false);
        } catch (RuntimeException | LinkageError e) {
            return false;
        }
    }

    /** An execution event of the plan on a thread other than the plan's: tests run in parallel. */
    private void checkThread() {
        Thread t = planThread;
        if (!parallelTold && t != null && Thread.currentThread() != t) {
            parallel("test-plan execution on more than one thread");
        }
    }

    /**
     * Tests run in parallel: per-test windows are by time, so what other threads run during a
     * test (other tests, another class's {@code @BeforeAll}, constructors) counts as its; the
     * runtime records every test from now on as overlapping and says so once (a runtime
     * without Cov.parallel, an older agent's, is left as it is).
     */
    private static void parallel(String why) {
        if (off || parallelTold) {
            return;
        }
        parallelTold = true;
        try {
            Cov.parallel(why);
        } catch (LinkageError e) {
            // an older runtime: only overlapping tests are told
        }
    }

    @Override
    public void executionStarted(TestIdentifier id) {
        checkThread();
        if (!off && id.isTest()) {
            try {
                Cov.begin(unique(id, plan));
            } catch (LinkageError e) {
                off = true;
            }
        }
    }

    @Override
    public void executionFinished(TestIdentifier id, TestExecutionResult result) {
        checkThread();
        if (!off && id.isTest()) {
            try {
                if (byName) {
                    try {
                        // by name: under parallel execution another test may be running
                        Cov.end(unique(id, plan));
                        return;
                    } catch (NoSuchMethodError e) {
                        byName = false;
                    }
                }
                Cov.end();
            } catch (LinkageError e) {
                off = true;
            }
        }
    }

    /**
     * The test's {@link #name}, made its own: a name an earlier test of this JVM (another unique
     * id) was given gets {@code #2}, {@code #3}, … appended, the first free; the same unique id
     * always gets the same name.
     */
    static String unique(TestIdentifier id, TestPlan plan) {
        String uid;
        try {
            uid = id.getUniqueId();
        } catch (RuntimeException | LinkageError e) {
            uid = null;
        }
        synchronized (NAMES) {
            String n = uid == null ? null : NAMES.get(uid);
            if (n != null) {
                return n;
            }
            String base = name(id, plan);
            n = base;
            for (int k = 2; TAKEN.contains(n); k++) {
                n = base + "#" + k;
            }
            TAKEN.add(n);
            if (uid != null) {
                NAMES.put(uid, n);
            }
            return n;
        }
    }

    /**
     * {@code a.BTest#one()} for a test method (read reflectively: MethodSource), else its display
     * name; an invocation of a parameterized or repeated test, or a dynamic test of a test
     * factory, shares its method's source and is told apart by its indexes in the unique id
     * ({@code [test-template-invocation:#2]}, {@code [dynamic-test:#1]} inside
     * {@code [dynamic-container:#3]}): {@code a.BTest#one(int)[2]}, {@code a.BTest#f()[3][1]}. A
     * dynamic test is named by its test factory's method whatever source it was given (a
     * {@code classpath:} URI); a JUnit 4 test run by the Vintage engine whose display name is its
     * method's with a {@code [...]} (Parameterized: {@code cls[1]}) has that appended:
     * {@code a.Old4Test#cls()[1]}.
     */
    static String name(TestIdentifier id, TestPlan plan) {
        try {
            String uid = id.getUniqueId();
            String[] m = null;
            if (uid.contains("/[dynamic-")) {
                m = factory(id, plan);
            }
            if (m == null) {
                m = method(id);
            }
            if (m == null) {
                return id.getDisplayName();
            }
            String n = m[0] + "#" + m[1] + "(" + m[2] + ")" + invocations(uid);
            if (uid.startsWith("[engine:junit-vintage]")) {
                String d = id.getDisplayName();
                if (d != null && d.length() > m[1].length() + 1 && d.startsWith(m[1])
                        && d.charAt(m[1].length()) == '[' && d.endsWith("]")) {
                    n += d.substring(m[1].length());
                }
            }
            return n;
        } catch (RuntimeException | LinkageError e) {
            return id.getDisplayName();
        }
    }

    /** The method of the test factory of a dynamic test (its nearest ancestor that is not dynamic). */
    private static String[] factory(TestIdentifier id, TestPlan plan) {
        if (plan == null) {
            return null;
        }
        TestIdentifier p = id;
        for (int depth = 0; depth < 1000; depth++) {
            Optional<TestIdentifier> parent = plan.getParent(p);
            if (!parent.isPresent()) {
                return null;
            }
            p = parent.get();
            String uid = p.getUniqueId();
            int last = uid.lastIndexOf("/[");
            if (!uid.startsWith("[dynamic-", last + 1)) {
                return method(p);
            }
        }
        return null;
    }

    /**
     * The indexes of the invocation segments of a JUnit Platform unique id, as {@code [2]} each
     * ({@code [engine:junit-jupiter]/[class:a.T]/[test-template:x(int)]/[test-template-invocation:#2]}
     * gives {@code [2]}); empty for a test method's own id.
     */
    static String invocations(String uniqueId) {
        StringBuilder b = new StringBuilder();
        for (String seg : uniqueId.split("/(?=\\[)")) {
            if (!seg.startsWith("[") || !seg.endsWith("]")) {
                continue;
            }
            int colon = seg.indexOf(':');
            if (colon < 0) {
                continue;
            }
            String type = seg.substring(1, colon);
            String value = seg.substring(colon + 1, seg.length() - 1);
            if ((type.equals("test-template-invocation") || type.equals("dynamic-test")
                    || type.equals("dynamic-container")) && value.startsWith("#")) {
                b.append('[').append(value, 1, value.length()).append(']');
            }
        }
        return b.toString();
    }

    /** (class, method, parameter types) of a test whose source is a method, else null. */
    private static String[] method(TestIdentifier id) {
        try {
            Object source = ((Optional<?>) id.getClass().getMethod("getSource").invoke(id)).orElse(null);
            if (source != null) {
                Class<?> c = source.getClass();
                Method cls = c.getMethod("getClassName");
                Method m = c.getMethod("getMethodName");
                Method p = c.getMethod("getMethodParameterTypes");
                return new String[] {
                    String.valueOf(cls.invoke(source)), String.valueOf(m.invoke(source)),
                    String.valueOf(p.invoke(source))
                };
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            // not a method source: the display name
        }
        return null;
    }
}

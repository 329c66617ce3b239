package bci.runtime;

import java.lang.reflect.Method;
import java.util.Optional;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;

/**
 * Per-test coverage under the JUnit Platform: found through ServiceLoader
 * ({@code META-INF/services/org.junit.platform.launcher.TestExecutionListener} in the runtime jar)
 * when the runtime jar is on the class path; each test runs between {@link Cov#begin} and
 * {@link Cov#end(String)} under its name ({@code package.Class#method(parameter types)}, with
 * {@code [N]} for each invocation index of a parameterized, repeated or dynamic test, or its
 * display name when it is not a method). Compiled against stand-ins of the three JUnit types it names, so
 * the runtime jar needs no JUnit; never fails a test run (a runtime without begin/end is ignored).
 */
public final class JUnitListener implements TestExecutionListener {
    private static volatile boolean off;
    /** The runtime has no end(String) (an agent of an older bci): end() instead. */
    private static volatile boolean byName = true;

    @Override
    public void executionStarted(TestIdentifier id) {
        if (!off && id.isTest()) {
            try {
                Cov.begin(name(id));
            } catch (LinkageError e) {
                off = true;
            }
        }
    }

    @Override
    public void executionFinished(TestIdentifier id, TestExecutionResult result) {
        if (!off && id.isTest()) {
            try {
                if (byName) {
                    try {
                        // by name: under parallel execution another test may be running
                        Cov.end(name(id));
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
     * {@code a.BTest#one()} for a test method (read reflectively: MethodSource), else its display
     * name; an invocation of a parameterized or repeated test, or a dynamic test of a test
     * factory, shares its method's source and is told apart by its indexes in the unique id
     * ({@code [test-template-invocation:#2]}, {@code [dynamic-test:#1]} inside
     * {@code [dynamic-container:#3]}): {@code a.BTest#one(int)[2]}, {@code a.BTest#f()[3][1]}.
     */
    static String name(TestIdentifier id) {
        String m = methodName(id);
        if (m == null) {
            return id.getDisplayName();
        }
        try {
            return m + invocations(id.getUniqueId());
        } catch (RuntimeException | LinkageError e) {
            return m;
        }
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

    /** {@code a.BTest#one()} of a test whose source is a method, else null. */
    private static String methodName(TestIdentifier id) {
        try {
            Object source = ((Optional<?>) id.getClass().getMethod("getSource").invoke(id)).orElse(null);
            if (source != null) {
                Class<?> c = source.getClass();
                Method cls = c.getMethod("getClassName");
                Method m = c.getMethod("getMethodName");
                Method p = c.getMethod("getMethodParameterTypes");
                return cls.invoke(source) + "#" + m.invoke(source) + "(" + p.invoke(source) + ")";
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            // not a method source: the display name
        }
        return null;
    }
}

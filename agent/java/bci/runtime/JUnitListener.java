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
 * {@link Cov#end(String)} under its name ({@code package.Class#method(parameter types)}, or its display
 * name when it is not a method). Compiled against stand-ins of the three JUnit types it names, so
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

    /** {@code a.BTest#one()} for a test method (read reflectively: MethodSource), else its display name. */
    static String name(TestIdentifier id) {
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
        return id.getDisplayName();
    }
}

package org.junit.platform.launcher;

import java.util.Optional;

/** Compile-time stand-in for JUnit Platform's class (the methods bci.runtime.JUnitListener calls). */
public class TestPlan {
    public Optional<TestIdentifier> getParent(TestIdentifier child) {
        throw new UnsupportedOperationException();
    }

    /** JUnit Platform 1.8+. */
    public org.junit.platform.engine.ConfigurationParameters getConfigurationParameters() {
        throw new UnsupportedOperationException();
    }
}

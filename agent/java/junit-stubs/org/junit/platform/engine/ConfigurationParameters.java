package org.junit.platform.engine;

import java.util.Optional;

/** Compile-time stand-in for JUnit Platform's interface (the method bci.runtime.JUnitListener calls). */
public interface ConfigurationParameters {
    Optional<Boolean> getBoolean(String key);
}

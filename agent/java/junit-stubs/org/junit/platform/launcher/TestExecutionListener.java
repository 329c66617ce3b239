package org.junit.platform.launcher;

import org.junit.platform.engine.TestExecutionResult;

/**
 * Compile-time stand-in for JUnit Platform's interface (the methods bci.runtime.JUnitListener
 * overrides, same descriptors): the runtime jar needs no JUnit to build; at run time the real
 * interface is used. Never packaged (javac -implicit:none).
 */
public interface TestExecutionListener {
    default void testPlanExecutionStarted(TestPlan testPlan) {}

    default void executionStarted(TestIdentifier testIdentifier) {}

    default void executionFinished(TestIdentifier testIdentifier, TestExecutionResult testExecutionResult) {}
}

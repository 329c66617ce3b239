package org.junit.platform.engine;

/** Compile-time stand-in for JUnit Platform's class (only named in a signature). */
public class TestExecutionResult {}

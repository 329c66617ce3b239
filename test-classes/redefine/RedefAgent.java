import java.lang.instrument.Instrumentation;

/** A java agent that only keeps its Instrumentation, for Redef (see Redef.java). */
public class RedefAgent {
    public static volatile Instrumentation inst;

    public static void premain(String args, Instrumentation i) {
        inst = i;
    }
}

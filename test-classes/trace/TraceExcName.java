// An exception event under max_string (agent/tests/tracing.rs,
// exception_class_names_are_never_cut; rules in trace-exc-name.toml): the class name is always
// whole, only the message (tostring) and string values are cut to max_string.
public class TraceExcName {
    static final class AVeryLongNamedFailure extends RuntimeException {
        AVeryLongNamedFailure(String m) {
            super(m);
        }
    }

    // expect: rule=plain count=3
    // expect: rule=plain event=exception args=["0123456789..."] exception="java.lang.IllegalArgumentException"
    // expect: rule=plain event=exception args=["short"] exception="TraceExcName$AVeryLongNamedFailure"
    // expect: rule=plain event=exception args=[null] exception="TraceExcName$AVeryLongNamedFailure"
    // expect: rule=message count=3
    // expect: rule=message event=exception args=["0123456789..."] exception="java.lang.IllegalArgumentException: 0123456789..."
    // expect: rule=message event=exception args=["short"] exception="TraceExcName$AVeryLongNamedFailure: short"
    // expect: rule=message event=exception args=[null] exception="TraceExcName$AVeryLongNamedFailure"
    static void fail(String m) {
        if (m != null && m.length() > 10) {
            throw new IllegalArgumentException(m);
        }
        throw new AVeryLongNamedFailure(m);
    }

    public static void main(String[] args) {
        for (String m : new String[] {"0123456789abcdef", "short", null}) {
            try {
                fail(m);
            } catch (RuntimeException e) {
                System.out.println("caught " + e.getClass().getSimpleName());
            }
        }
    }
}

// trace-stack.toml (agent/tests/tracing.rs, stack_frames_are_the_callers): leaf() returns the
// frames a Throwable made on its return line sees, which is where the runtime reads the stack
// for the exit event: the event's `stack` must be their first 3 (rule "three") and all of them
// (rule "all", 64: more than the thread has), for a direct call chain and one through reflection.
public class TraceStack {
    static String leaf(int x) {
        return frames(new Throwable(), x);
    }

    static String frames(Throwable t, int x) {
        StringBuilder sb = new StringBuilder();
        for (StackTraceElement f : t.getStackTrace()) {
            sb.append(sb.length() == 0 ? "" : ",").append('"').append(f.getClassName()).append('.')
                    .append(f.getMethodName()).append(':').append(f.getLineNumber()).append('"');
        }
        return x + " [" + sb + "]";
    }

    static String c(int x) {
        return leaf(x);
    }

    static String b(int x) {
        return c(x);
    }

    static String a(int x) {
        return b(x);
    }

    public static void main(String[] args) throws Exception {
        System.out.println(a(1));
        System.out.println(TraceStack.class.getDeclaredMethod("a", int.class).invoke(null, 2));
    }
}

// Tracing rules exercised (agent/tests/tracing.rs, rules in trace-basics.toml). The expected
// events and counts are written next to the code as `// expect:` lines the test checks.
public class TraceBasics {
    static int sink;

    // expect: rule=add count=7
    // expect: rule=add event=exit args=[1,2] ret=3
    // expect: rule=add event=exit args=[40,2] ret=42
    static int add(int a, int b) {
        return a + b;
    }

    // expect: rule=greet event=exit args=["bob",7] ret="hi bob"
    // expect: rule=greet event=exit args=["aaaaaaaaaa...",1] ret="hi aaaaaaa..."
    String greet(String who, long n) {
        return "hi " + who;
    }

    // expect: rule=boom count=2
    // expect: rule=boom event=exception args=[true] exception="java.lang.IllegalStateException"
    // expect: rule=boom event=exit args=[false] ret=null
    static Object boom(boolean fail) {
        if (fail) {
            throw new IllegalStateException("boom");
        }
        return null;
    }

    // expect: rule=slow events=1
    // expect: rule=slow event=exit args=[220]
    static void sleepy(int ms) throws InterruptedException {
        Thread.sleep(ms);
    }

    // expect: rule=sampled count=10 events=3
    static double half(double x) {
        return x / 2;
    }

    // expect: rule=entries event=entry args=[1.5,"x"] count=1
    static void point(float f, char c) {
        sink += (int) f + c;
    }

    // expect: rule=line count=4
    // expect: rule=call events=2
    // expect: rule=call event=call args=[4] location="call TraceBasics.add(II)I at line 57"
    // expect: rule=call event=call args=[4] location="call TraceBasics.add(II)I at line 58"
    // expect: rule=after events=2
    // expect: rule=after event=after-call args=[4] location="after call TraceBasics.add(II)I at line 57"
    // expect: rule=after event=after-call args=[4] location="after call TraceBasics.add(II)I at line 58"
    static int loop(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            s += i; // line rule: this line
        }
        int t = add(n, 0); // call rule: first call
        return add(s, t); // call rule: second call
    }

    TraceBasics() {
        sink++;
    }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < 3; i++) {
            sink += add(i, i);
        }
        sink += add(1, 2);
        sink += add(40, 2);
        TraceBasics t = new TraceBasics();
        t.greet("bob", 7);
        t.greet("aaaaaaaaaaaaaaaaaaaa", 1);
        try {
            boom(true);
        } catch (IllegalStateException e) {
            sink++;
        }
        boom(false);
        sleepy(0);
        sleepy(220);
        for (int i = 0; i < 10; i++) {
            half(i);
        }
        point(1.5f, 'x');
        sink += loop(4);
        System.out.println("sink " + sink);
    }
}

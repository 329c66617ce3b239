// Every call takes a new call path: a(40, bits) and b(40, bits) recurse 40 deep, choosing a or b
// by the bits of a multiplicative hash, so n iterations make ~n * 25 distinct paths (whole
// stacks with format=collapsed or a large depth=). agent/tests/memory.rs: a profile larger
// than the heap holds twice, and a tree that grows past the memory budget.
public class Paths {
    static long calls;

    static void a(int d, long bits) {
        calls++;
        if (d == 0) return;
        if ((bits & 1) == 0) a(d - 1, bits >>> 1); else b(d - 1, bits >>> 1);
    }

    static void b(int d, long bits) {
        calls++;
        if (d == 0) return;
        if ((bits & 1) == 0) a(d - 1, bits >>> 1); else b(d - 1, bits >>> 1);
    }

    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        for (long i = 0; i < n; i++) a(40, i * 0x9E3779B97F4A7C15L);
        System.out.println("calls=" + calls);
    }
}

// Exits through System.exit(3) from 5 frames deep after 2 x 300 ms of wall-clock spinning:
// with a timed clock (clock=wall|cpu, -Dbci.clock=wall offline) the frames still open at the
// final dump are charged up to it (agent/tests/cpu_times.rs, cli/tests/offline.rs).
public class DeepExit {
    static void spin(long ms) {
        long t0 = System.nanoTime();
        while (System.nanoTime() - t0 < ms * 1_000_000L) {
        }
    }

    static void deep(int d) {
        if (d == 0) {
            spin(300);
            System.exit(3);
        }
        deep(d - 1);
    }

    public static void main(String[] a) {
        spin(300);
        deep(4);
    }
}

/** Loaded by CovGenLoad from bytes on no class path. */
public class Gen {
    public static int run(int n) {
        int s = 0;
        for (int i = 0; i < n; i++) {
            if (i % 3 == 0) {
                s += i;
            }
        }
        return s;
    }
}

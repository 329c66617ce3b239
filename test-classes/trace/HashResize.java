import java.util.HashMap;

// rules/examples/hashmap-resize.toml (agent/tests/tracing.rs): 100 puts into a new HashMap
// resize it 5 times: the first put allocates 16 buckets, then 13, 25, 49 and 97 entries
// double them (load factor 0.75).
// (agent/tests/tracing.rs: 5 events whose stack has HashResize.fill)
public class HashResize {
    static HashMap<Integer, Integer> fill(int n) {
        HashMap<Integer, Integer> m = new HashMap<>();
        for (int i = 0; i < n; i++) {
            m.put(i, i);
        }
        return m;
    }

    public static void main(String[] args) {
        System.out.println(fill(100).size());
    }
}

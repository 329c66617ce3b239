// Paths.main (a call-path tree past the memory budget), then 4 s of allocating 1 MB arrays
// with args[1] of them live: the program needs its heap back once recording stopped.
public class Alloc {
    public static void main(String[] args) throws Exception {
        Paths.main(new String[] {args[0]});
        int live = Integer.parseInt(args[1]);
        byte[][] keep = new byte[live][];
        long end = System.nanoTime() + 4_000_000_000L;
        long i = 0;
        while (System.nanoTime() < end) {
            keep[(int) (i++ % live)] = new byte[1 << 20];
            if (i % 50 == 0) Thread.sleep(1);
        }
        System.out.println("alloc ok " + i);
    }
}

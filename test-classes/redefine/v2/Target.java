public class Target {
    static int f(int x) { return x + 2; }
    static int g(int x) {
        if (x < 0) {
            return 0;
        }
        return f(x) * 2;
    }
}

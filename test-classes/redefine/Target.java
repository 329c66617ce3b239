public class Target {
    static int f(int x) { return x + 1; }
    static int g(int x) { return f(x) * 2; }
}

import java.util.function.IntUnaryOperator;
import java.util.function.Supplier;

// Lambdas (synthetic lambda$main$N methods in this class) and a method reference.
// expect: Lambdas.lambda$main$0 count=1000
// expect: Lambdas.lambda$main$1 count=5
// expect: Lambdas.twice count=1000
// expect: Lambdas.apply count=1005
public class Lambdas {
    static int twice(int x) {
        return 2 * x;
    }

    static int apply(IntUnaryOperator f, int x) {
        return f.applyAsInt(x);
    }

    public static void main(String[] args) {
        int s = 0;
        for (int i = 0; i < 1000; i++) {
            s += apply(x -> twice(x) + 1, i);
        }
        Supplier<String> sup = () -> "x";
        for (int i = 0; i < 5; i++) {
            s += apply(Math::abs, -i) + sup.get().length() - 1;
        }
        System.out.println("lambdas " + s);
    }
}

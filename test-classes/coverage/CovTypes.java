import java.util.function.IntUnaryOperator;

/**
 * Coverage expectations (format: CovBasics). @every-line: every line with code carries one.
 * Lambdas (their own methods), interfaces with default and static methods, records (the
 * generated toString/hashCode/equals and accessors are not the program's).
 */
public class CovTypes { // hits=0
    interface Shape {
        double area();

        default String describe() {
            return "area " + area(); // hits=2
        }

        static Shape unit() {
            return new Square(1); // hits=1
        }
    }

    record Square(double side) implements Shape { // hits=2 jacoco=partly 0/0 (0.8.6 keeps record accessors)
        public double area() {
            return side * side; // hits=2
        }
    }

    record Point(int x, int y) { // jacoco=partly 0/0 (0.8.6 keeps record accessors)
        Point { // hits=3
            if (x < 0) { // hits=3 br=2/2
                throw new IllegalArgumentException(); // hits=1
            }
        } // hits=2

        int sum() {
            return x + y; // hits=1
        }
    }

    static int apply(IntUnaryOperator f, int v) {
        return f.applyAsInt(v); // hits=4
    }

    public static void main(String[] args) {
        int k = 3; // hits=1
        IntUnaryOperator twice = x -> 2 * x; // hits=4
        IntUnaryOperator plusK = x -> { // hits=1
            int r = x + k; // hits=1
            return r; // hits=1
        };
        apply(twice, 1); // hits=1
        apply(twice, 2); // hits=1
        apply(twice, 3); // hits=1
        apply(plusK, 4); // hits=1
        IntUnaryOperator never = x -> x - 1; // hits=1 st=partly
        Shape s = Shape.unit(); // hits=1
        s.describe(); // hits=1
        new Square(2).describe(); // hits=1
        Point p = new Point(1, 2); // hits=1
        p.sum(); // hits=1
        new Point(3, 4).equals(p); // hits=1
        p.toString(); // hits=1
        p.x(); // hits=1
        try {
            new Point(-1, 0); // hits=1 st=partly jacoco=not 0/0 (cut short)
        } catch (IllegalArgumentException e) { // hits=1
        } // hits=0
    } // hits=1
}

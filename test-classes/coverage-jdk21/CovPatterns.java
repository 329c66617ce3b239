/**
 * Coverage expectations (format: ../coverage/CovBasics.java) for record patterns (javac 21+;
 * cli/tests/coverage.rs compiles and runs this with JDK 25 when installed). @every-line: every
 * line with code carries one. javac wraps a pattern's record accessor calls in a handler of
 * Throwable that throws `new MatchException(cause.toString(), cause)`: no code of the source,
 * neither covered nor missed, even when an accessor throws (Faulty).
 * javac 23+ also tests each primitive component pattern with a constant `iconst_1; ifeq`
 * (JDK-8303374) and, in a switch, restarts it on the outcome that never comes: a branch no run
 * can take, which JaCoCo 0.8.6 (older than javac 23) counts as missed. The constant-branch
 * filter leaves it out, with the restart only it reaches (manhattan: 4 branches less, area's
 * Square line full; before, 8/14 and 1/2); the expectations are javac 25's.
 */
public class CovPatterns { // hits=0
    record Box(Object content) {} // hits=5

    record Point(int x, int y) {} // hits=3

    record Line(Point from, Point to) {} // hits=1

    sealed interface Shape permits Square, Circle {}

    record Square(int side) implements Shape {} // hits=1

    record Circle(int r) implements Shape {} // hits=3

    /** An accessor that throws: the pattern's handler turns it into a MatchException. */
    record Faulty(Object value) { // hits=2
        public Object value() {
            if (value == null) { // hits=2 br=2/2
                throw new IllegalStateException("no value"); // hits=1
            }
            return value; // hits=1
        }
    }

    static String content(Object o) {
        if (o instanceof Box(String s)) { // hits=3 br=4/4
            return s; // hits=1
        }
        return "-"; // hits=2
    }

    static int manhattan(Object o) {
        if (o instanceof Line(Point(var x1, var y1), Point(var x2, var y2))) { // hits=2 br=4/6
            return Math.abs(x2 - x1) + Math.abs(y2 - y1); // hits=1
        }
        return -1; // hits=1
    }

    static int area(Shape s) {
        return switch (s) { // hits=4 br=2/2
            case Square(int side) -> side * side; // hits=1
            case Circle(int r) when r > 10 -> 1000; // hits=3 br=2/2
            case Circle(int r) -> 3 * r * r; // hits=3 br=2/2
        };
    }

    static String describe(Object o) {
        switch (o) { // hits=3 br=3/3
            case Box(Box(var inner)) -> { // hits=2 br=2/2
                return "nested " + inner; // hits=1
            }
            case Box(var c) -> { // hits=1
                return "box " + c; // hits=1
            }
            default -> {
                return "other"; // hits=1
            }
        }
    }

    static String faulty(Object o) {
        try {
            if (o instanceof Faulty(String v)) { // hits=2 br=2/4
                return v; // hits=1
            }
            return "not a string"; // hits=0
        } catch (MatchException e) { // hits=1
            return e.getCause().getMessage(); // hits=1
        }
    }

    public static void main(String[] args) {
        content(new Box("a")); // hits=1
        content(new Box(1)); // hits=1
        content("plain"); // hits=1
        manhattan(new Line(new Point(0, 0), new Point(3, 4))); // hits=1
        manhattan(new Point(1, 1)); // hits=1
        area(new Square(2)); // hits=1
        area(new Circle(1)); // hits=1
        area(new Circle(2)); // hits=1
        area(new Circle(11)); // hits=1
        describe(new Box(new Box("x"))); // hits=1
        describe(new Box(2)); // hits=1
        describe("y"); // hits=1
        faulty(new Faulty("v")); // hits=1
        faulty(new Faulty(null)); // hits=1
    } // hits=1
}

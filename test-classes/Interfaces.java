// Interface default and static methods, overridden and inherited.
// expect: Interfaces$Shape.describe count=30
// expect: Interfaces$Shape.unit count=30
// expect: Interfaces$Square.area count=20
// expect: Interfaces$Circle.area count=10
// expect: Interfaces$Circle.describe count=10
public class Interfaces {
    interface Shape {
        int area();

        default int describe() {
            return area() + unit();
        }

        static int unit() {
            return 1;
        }
    }

    static class Square implements Shape {
        public int area() {
            return 4;
        }
    }

    static class Circle implements Shape {
        public int area() {
            return 3;
        }

        public int describe() {
            return Shape.super.describe() * 2;
        }
    }

    public static void main(String[] args) {
        Shape[] shapes = {new Square(), new Square(), new Circle()};
        int s = 0;
        for (int i = 0; i < 10; i++) {
            for (Shape sh : shapes) {
                s += sh.describe();
            }
        }
        System.out.println("interfaces " + s);
    }
}

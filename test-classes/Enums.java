// Enums: constructor per constant, constant-specific bodies, values(), switch.
// expect: Enums$Op.<init> count=3
// expect: Enums$Op.<clinit> count=1
// expect: Enums$Op$1.apply count=100
// expect: Enums$Op$2.apply count=100
// expect: Enums$Op$3.apply count=100
// expect: Enums$Op.values count=100
// expect: Enums$Color.next count=60
// expect: Enums$Color.<init> count=3
public class Enums {
    enum Op {
        ADD {
            int apply(int a, int b) {
                return a + b;
            }
        },
        SUB {
            int apply(int a, int b) {
                return a - b;
            }
        },
        MUL {
            int apply(int a, int b) {
                return a * b;
            }
        };

        abstract int apply(int a, int b);
    }

    enum Color {
        RED, GREEN, BLUE;

        Color next() {
            switch (this) {
                case RED:
                    return GREEN;
                case GREEN:
                    return BLUE;
                default:
                    return RED;
            }
        }
    }

    public static void main(String[] args) {
        int s = 0;
        for (int i = 0; i < 100; i++) {
            for (Op op : Op.values()) {
                s += op.apply(i, 3);
            }
        }
        Color c = Color.RED;
        for (int i = 0; i < 60; i++) {
            c = c.next();
        }
        System.out.println("enums " + s + " " + c);
    }
}

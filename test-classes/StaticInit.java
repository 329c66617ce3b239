// Static initializers run once; a <clinit> calling a helper 50 times; a nested class whose
// initializer runs on first use.
// expect: StaticInit.<clinit> count=1
// expect: StaticInit.helper count=50
// expect: StaticInit$Lazy.<clinit> count=1
// expect: StaticInit$Lazy.get count=20
// expect-path: StaticInit.helper < StaticInit.<clinit> count=50
public class StaticInit {
    static final int[] TABLE = new int[50];

    static {
        for (int i = 0; i < TABLE.length; i++) {
            TABLE[i] = helper(i);
        }
    }

    static int helper(int i) {
        return i * i;
    }

    static class Lazy {
        static final String NAME;

        static {
            NAME = "lazy";
        }

        static int get(int i) {
            return NAME.length() + i;
        }
    }

    public static void main(String[] args) {
        int s = 0;
        for (int i = 0; i < 20; i++) {
            s += Lazy.get(i);
        }
        System.out.println("static " + s + " " + TABLE[7]);
    }
}

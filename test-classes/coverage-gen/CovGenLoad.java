/**
 * Defines a class at run time from bytes that are on no class path (as rhino, jython and
 * groovy generate theirs) and calls it: `CovGenLoad <file of Gen.class> [unnamed]` (`unnamed`:
 * defined as `defineClass(null, …)`, so the agent's hook gets no name). With classdump= the
 * agent keeps the bytes of every covered class, so that `bci report --classes` can name
 * the generated one (agent/tests/coverage.rs).
 */
public class CovGenLoad {
    static final class Loader extends ClassLoader {
        Loader() {
            super(CovGenLoad.class.getClassLoader());
        }

        Class<?> define(byte[] b, String name) {
            return defineClass(name, b, 0, b.length);
        }
    }

    public static void main(String[] args) throws Exception {
        byte[] b = java.nio.file.Files.readAllBytes(java.nio.file.Path.of(args[0]));
        String name = args.length > 1 && args[1].equals("unnamed") ? null : "Gen";
        Class<?> c = new Loader().define(b, name);
        System.out.println(c.getMethod("run", int.class).invoke(null, 10));
    }
}

import java.lang.instrument.ClassDefinition;
import java.lang.instrument.Instrumentation;
import java.nio.file.Files;
import java.nio.file.Paths;

/**
 * Calls Target, retransforms it, calls it again, redefines it with the bytes of
 * ARGS[0]/Target.class (v2/Target.java: f adds 2, g has a branch; the same fields and methods),
 * and calls it again, retransforming it once more: what an IDE's HotSwap does. Run with
 * -javaagent: a jar of RedefAgent (Premain-Class, Can-Redefine-Classes,
 * Can-Retransform-Classes).
 */
public class Redef {
    public static void main(String[] a) throws Exception {
        int s = 0;
        for (int i = 0; i < 100; i++) s += Target.g(i);       // first version: g 100, f 100
        Instrumentation inst = RedefAgent.inst;
        inst.retransformClasses(Target.class);
        for (int i = 0; i < 200; i++) s += Target.g(i);       // first version: g 300, f 300
        byte[] v2 = Files.readAllBytes(Paths.get(a[0], "Target.class"));
        inst.redefineClasses(new ClassDefinition(Target.class, v2));
        for (int i = 0; i < 300; i++) s += Target.g(i);
        inst.retransformClasses(Target.class);
        for (int i = 0; i < 100; i++) s += Target.g(i);       // second version: g 400, f 400
        System.out.println("s=" + s);                          // 151500 (150300 without v2)
    }
}

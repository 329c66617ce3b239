import java.lang.instrument.ClassDefinition;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;

/**
 * Calls Target, reads its current bytes back the way Byte Buddy's ClassFileLocator.AgentBased
 * does (a retransformation-capable transformer sees the bytes the other agents gave, their
 * probes included), redefines Target with those bytes and calls it again: g 300, f 300.
 * Run with -javaagent: a jar of RedefAgent, as Redef.
 */
public class Reread {
    public static void main(String[] a) throws Exception {
        int s = 0;
        for (int i = 0; i < 100; i++) s += Target.g(i);
        Instrumentation inst = RedefAgent.inst;
        final byte[][] seen = new byte[1][];
        ClassFileTransformer spy = new ClassFileTransformer() {
            public byte[] transform(ClassLoader l, String name, Class<?> c, ProtectionDomain pd, byte[] b) {
                if (c == Target.class) seen[0] = b.clone();
                return null;
            }
        };
        inst.addTransformer(spy, true);
        inst.retransformClasses(Target.class);
        inst.removeTransformer(spy);
        inst.redefineClasses(new ClassDefinition(Target.class, seen[0]));
        for (int i = 0; i < 200; i++) s += Target.g(i);
        System.out.println("s=" + s);                          // 50300
    }
}

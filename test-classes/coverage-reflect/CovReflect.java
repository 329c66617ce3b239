import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;

// Reflection and deserialization under coverage=y of every class (agent/tests/coverage.rs,
// reflection_and_serialization_run_under_coverage): on JDK 17 the 16th Method.invoke or
// Constructor.newInstance, and every deserialization, run a class the JDK generates
// (jdk.internal.reflect.Generated*Accessor*), which coverage counters made fail to initialize.
// `java CovReflect method|ctor|serial` prints "<what> ok <n>".
public class CovReflect {
    public static int t(int x) {
        return x + 1;
    }

    public CovReflect() {}

    static class S implements Serializable {
        int v = 3;
    }

    public static void main(String[] a) throws Exception {
        String what = a[0];
        int s = 0;
        if (what.equals("method")) {
            Method m = CovReflect.class.getMethod("t", int.class);
            for (int i = 0; i < 20; i++) {
                s += (Integer) m.invoke(null, i);
            }
        } else if (what.equals("ctor")) {
            Constructor<CovReflect> c = CovReflect.class.getConstructor();
            for (int i = 0; i < 20; i++) {
                c.newInstance();
                s++;
            }
        } else {
            ByteArrayOutputStream bo = new ByteArrayOutputStream();
            try (ObjectOutputStream oo = new ObjectOutputStream(bo)) {
                oo.writeObject(new S());
            }
            Object o = new ObjectInputStream(new ByteArrayInputStream(bo.toByteArray())).readObject();
            s = ((S) o).v;
        }
        System.out.println(what + " ok " + s);
    }
}

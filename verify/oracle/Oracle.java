// HotSpot oracle harness for bci-verify. Run with -Xverify:all.
// Reads a spec file (argument 1), one directive per line:
//   G<TAB>path<TAB>path...   start a group: a fresh URLClassLoader over the paths (parent: platform loader)
//   C<TAB>binary.Name        load (no <clinit>) and link one class in the current group
//   M<TAB>module<TAB>binary.Name  load and link one class of a (patched) named module
//   D<TAB>file.class<TAB>binary.Name  define this class file in a fresh loader over the current group's paths
//                        (the file shadows the class of the same name; everything else comes from the paths)
// Prints one line per class:  V<TAB>KIND<TAB>binary.Name<TAB>message
// KIND: OK | VERIFY (VerifyError) | FORMAT (ClassFormatError, incl. UnsupportedClassVersionError)
//       | LINK (other LinkageError: NoClassDefFoundError of missing deps, IllegalAccessError, ...) | OTHER
import java.io.*;
import java.net.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

public class Oracle {
    static PrintStream out;

    static String clean(String s) {
        if (s == null) return "";
        return s.replace('\t', ' ').replace('\n', ' ').replace('\r', ' ');
    }

    static void verdict(String kind, String name, String msg) {
        out.println("V\t" + kind + "\t" + name + "\t" + clean(msg));
    }

    static void link(Class<?> c) {
        // HotSpot links (and so verifies) a class when reflection asks for its members.
        c.getDeclaredMethods();
    }

    /** The class an error message is about, if it says: "in class file a/b/C", "Location: a/b/C.m(..)". */
    static String subject(String msg) {
        if (msg == null) return null;
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("in class file (\\S+)").matcher(msg);
        if (m.find()) return m.group(1);
        m = java.util.regex.Pattern.compile("Location:\\s+(\\S+)\\.[^.\\s]+\\(").matcher(msg);
        if (m.find()) return m.group(1);
        m = java.util.regex.Pattern.compile(" in class ([^\\s:]+)").matcher(msg);
        if (m.find()) return m.group(1);
        return null;
    }

    /** A VerifyError/ClassFormatError about another class (a supertype, or a class loaded while verifying). */
    static boolean aboutOther(String name, String msg) {
        String s = subject(msg);
        return s != null && !s.replace('/', '.').equals(name);
    }

    static void check(String name, java.util.function.Supplier<Class<?>> loader) {
        try {
            Class<?> c = loader.get();
            if (c == null) { verdict("LINK", name, "class not found"); return; }
            link(c);
            verdict("OK", name, "");
        } catch (VerifyError e) {
            if (aboutOther(name, e.getMessage())) verdict("LINK", name, "dependency rejected: " + e.getMessage());
            else verdict("VERIFY", name, e.getMessage());
        } catch (ClassFormatError e) {
            String msg = e.getClass().getName() + ": " + e.getMessage();
            if (aboutOther(name, e.getMessage())) verdict("LINK", name, "dependency rejected: " + msg);
            else verdict("FORMAT", name, msg);
        } catch (LinkageError e) {
            verdict("LINK", name, e.getClass().getName() + ": " + e.getMessage());
        } catch (Throwable e) {
            verdict("OTHER", name, e.getClass().getName() + ": " + e.getMessage());
        }
    }

    public static void main(String[] args) throws Exception {
        out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "UTF-8");
        List<String> lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
        ClassLoader group = ClassLoader.getSystemClassLoader();
        URL[] groupUrls = new URL[0];
        int n = 0;
        for (String line : lines) {
            if (line.isEmpty()) continue;
            String[] f = line.split("\t");
            switch (f[0]) {
                case "G": {
                    URL[] urls = new URL[f.length - 1];
                    for (int i = 1; i < f.length; i++) urls[i - 1] = Paths.get(f[i]).toUri().toURL();
                    group = new URLClassLoader(urls, ClassLoader.getPlatformClassLoader());
                    groupUrls = urls;
                    break;
                }
                case "D": {
                    final String name = f[2];
                    final byte[] bytes = Files.readAllBytes(Paths.get(f[1]));
                    final ClassLoader l = new Shadow(groupUrls, name, bytes);
                    check(name, () -> {
                        try { return Class.forName(name, false, l); }
                        catch (ClassNotFoundException e) { return null; }
                    });
                    break;
                }
                case "C": {
                    final ClassLoader l = group;
                    final String name = f[1];
                    check(name, () -> {
                        try { return Class.forName(name, false, l); }
                        catch (ClassNotFoundException e) { return null; }
                    });
                    break;
                }
                case "M": {
                    final String name = f[2];
                    Optional<Module> m = ModuleLayer.boot().findModule(f[1]);
                    if (!m.isPresent()) { verdict("LINK", name, "module not found: " + f[1]); break; }
                    check(name, () -> Class.forName(m.get(), name));
                    break;
                }
                default:
                    throw new IllegalArgumentException("bad spec line: " + line);
            }
            if (++n % 256 == 0) out.flush();
        }
        out.flush();
    }

    /** A loader over the group's paths in which one class comes from the given bytes. */
    static final class Shadow extends URLClassLoader {
        final String name;
        final byte[] bytes;
        Shadow(URL[] urls, String name, byte[] bytes) {
            super(urls, ClassLoader.getPlatformClassLoader());
            this.name = name;
            this.bytes = bytes;
        }
        @Override
        protected Class<?> loadClass(String n, boolean resolve) throws ClassNotFoundException {
            if (n.equals(name)) {
                synchronized (getClassLoadingLock(n)) {
                    Class<?> c = findLoadedClass(n);
                    if (c == null) c = defineClass(n, bytes, 0, bytes.length);
                    return c;
                }
            }
            return super.loadClass(n, resolve);
        }
    }
}

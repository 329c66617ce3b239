import java.nio.file.Files;
import java.nio.file.Path;

// Paths.main(args[0]) (a large call-path tree), then writes args[1] and waits (up to 120 s)
// for args[2] to exist before it ends: a SIGQUIT dump is taken while the profile is live.
public class BigProfile {
    public static void main(String[] args) throws Exception {
        Paths.main(new String[] {args[0]});
        Files.writeString(Path.of(args[1]), "ready");
        for (int i = 0; i < 12000 && !Files.exists(Path.of(args[2])); i++) Thread.sleep(10);
    }
}

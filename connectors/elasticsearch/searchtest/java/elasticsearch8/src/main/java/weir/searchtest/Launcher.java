package weir.searchtest;

import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.common.transport.TransportAddress;
import org.elasticsearch.http.HttpServerTransport;
import org.elasticsearch.env.Environment;
import org.elasticsearch.node.ClasspathPluginsNode;
import org.elasticsearch.node.InternalSettingsPreparer;
import org.elasticsearch.node.Node;
import org.elasticsearch.transport.netty4.Netty4Plugin;

/**
 * Starts one real Elasticsearch 8 node for weir's tests.
 *
 * Elasticsearch 8 no longer has Node's constructor that takes classpath
 * plugins, and its modules (reindex, mapper-extras, data-streams, x-pack) are
 * not on Maven Central: the node is ClasspathPluginsNode (the production
 * node, plugins loaded from the classpath) with the netty4 HTTP transport and RootInfoPlugin (GET /).
 * Security is off (x-pack is not on the classpath).
 *
 * Usage: Launcher HOME_DIR [key=value ...]
 *
 * The node listens on 127.0.0.1 (HTTP on an ephemeral port unless http.port is
 * given), prints one line "WEIR-SEARCHTEST http=HOST:PORT" on stdout once it
 * accepts requests, and shuts down when its stdin reaches end of file: the Go
 * test helper holds the write end of a pipe, so the node dies with the test
 * process even when that process is killed.
 */
public final class Launcher {
    private Launcher() {}

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
        }
    }

    private static void run(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: Launcher HOME_DIR [key=value ...]");
            System.exit(2);
        }
        Path home = Paths.get(args[0]).toAbsolutePath();
        Files.createDirectories(home.resolve("config"));
        Files.createDirectories(home.resolve("data"));
        Files.createDirectories(home.resolve("logs"));

        Settings.Builder b = Settings.builder()
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("cluster.name", "weir-searchtest")
            .put("node.name", "weir-searchtest")
            .put("network.host", "127.0.0.1")
            .put("http.port", "0")
            .put("transport.port", "0")
            .put("discovery.type", "single-node")
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .put("action.destructive_requires_name", false);
        for (int i = 1; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq <= 0) {
                System.err.println("bad setting (want key=value): " + args[i]);
                System.exit(2);
            }
            b.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        Settings settings = b.build();
        LogConfigurator.configureWithoutConfig(settings);

        Environment env = InternalSettingsPreparer.prepareEnvironment(
            settings, Collections.emptyMap(), home.resolve("config"), () -> "weir-searchtest");
        Node node = new ClasspathPluginsNode(env, List.of(Netty4Plugin.class, RootInfoPlugin.class));
        node.start();

        TransportAddress http = node.injector().getInstance(HttpServerTransport.class).boundAddress().publishAddress();
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        out.println("WEIR-SEARCHTEST http=" + http.getAddress() + ":" + http.getPort());

        // Parent-death watchdog: block until stdin closes, then stop.
        InputStream in = System.in;
        byte[] buf = new byte[256];
        while (in.read(buf) >= 0) {
            // ignore input
        }
        node.close();
        node.awaitClose(10, TimeUnit.SECONDS);
        System.exit(0);
    }
}

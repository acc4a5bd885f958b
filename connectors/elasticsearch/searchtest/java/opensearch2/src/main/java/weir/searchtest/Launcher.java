package weir.searchtest;

import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.concurrent.TimeUnit;

import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.core.common.transport.TransportAddress;
import org.opensearch.env.Environment;
import org.opensearch.http.HttpServerTransport;
import org.opensearch.index.mapper.MapperExtrasPlugin;
import org.opensearch.index.reindex.ReindexPlugin;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

/**
 * Starts one real OpenSearch node for weir's tests.
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

    /** Reaches Node's protected constructor that takes classpath plugins. */
    static final class PluginNode extends Node {
        PluginNode(Environment env, Collection<Class<? extends Plugin>> plugins) {
            super(env, plugins, true);
        }
    }

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
        Node node = new PluginNode(env, Arrays.asList(Netty4Plugin.class, ReindexPlugin.class, MapperExtrasPlugin.class));
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

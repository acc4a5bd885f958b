package weir.kafkapeer;

import java.util.Arrays;

/**
 * Runs Kafka's storage tool ("format ...") or the broker ("start
 * server.properties") in this JVM.
 */
public final class Launcher {
    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: Launcher format ARGS... | start server.properties");
            System.exit(2);
        }
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        switch (args[0]) {
            case "format" -> kafka.tools.StorageTool.main(args);
            case "start" -> kafka.Kafka.main(rest);
            default -> {
                System.err.println("unknown command " + args[0]);
                System.exit(2);
            }
        }
    }
}

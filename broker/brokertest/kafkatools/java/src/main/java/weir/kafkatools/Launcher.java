package weir.kafkatools;

import java.lang.reflect.Method;
import java.util.Arrays;

/**
 * Runs one of Kafka's tool classes: Launcher CLASS args... calls CLASS.main(args).
 * The tools call Exit.exit themselves on errors; a normal return exits 0.
 */
public final class Launcher {
    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: Launcher TOOL-CLASS [args...]");
            System.exit(2);
        }
        Class<?> tool = Class.forName(args[0]);
        Method main = tool.getMethod("main", String[].class);
        main.invoke(null, (Object) Arrays.copyOfRange(args, 1, args.length));
        System.exit(0);
    }
}

package weir.debeziumtest;

import java.io.BufferedWriter;
import java.io.InputStream;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.connect.data.Field;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.Struct;
import org.apache.kafka.connect.source.SourceRecord;

import io.debezium.embedded.Connect;
import io.debezium.engine.ChangeEvent;
import io.debezium.engine.DebeziumEngine;

/**
 * Runs Debezium's MariaDB connector in the embedded engine (no Kafka) for
 * weir's differential CDC tests.
 *
 * Usage: Launcher WORK_DIR key=value ...
 *
 * The key=value pairs are Debezium connector properties (database.hostname,
 * database.port, database.user, database.password, database.include.list,
 * database.server.id, ...); they override the defaults below. Offsets and
 * schema history are kept in files under WORK_DIR.
 *
 * Every change event becomes one JSON line on stdout:
 *
 *   {"db":..,"table":..,"op":"r|c|u|d","snapshot":"true|first|last|false|..",
 *    "key":{col:v},"before":{col:v}|null,"after":{col:v}|null,
 *    "types":{col:"INT64 io.debezium.time.MicroTime"}}
 *
 * Values are written as Debezium gives them, with no interpretation:
 * integers and floating point numbers as JSON numbers (Float.toString /
 * Double.toString, which round-trip), BigDecimal (bigint unsigned in precise
 * mode) as a string of its plain form, bytes (BIT columns; binary columns
 * are already base64 strings with binary.handling.mode=base64) as base64
 * strings, strings and booleans as themselves. "types" gives each column's
 * Connect schema type and name (e.g. io.debezium.time.MicroTimestamp) so the
 * reader can interpret them. Control lines have a "control" member:
 * {"control":"started"} once the connector task runs, and
 * {"control":"stopped","ok":bool,"message":..} when the engine ends.
 *
 * The engine shuts down when stdin reaches end of file (the Go test holds
 * the write end of a pipe, so the JVM dies with the test process) or on
 * SIGTERM; logs (slf4j-simple) go to stderr.
 */
public final class Launcher {
    private Launcher() {}

    private static Writer out;

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: Launcher WORK_DIR [key=value ...]");
            System.exit(2);
        }
        out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        Path work = Paths.get(args[0]).toAbsolutePath();
        Properties p = new Properties();
        p.setProperty("name", "weir-debeziumtest");
        p.setProperty("connector.class", "io.debezium.connector.mariadb.MariaDbConnector");
        p.setProperty("offset.storage", "org.apache.kafka.connect.storage.FileOffsetBackingStore");
        p.setProperty("offset.storage.file.filename", work.resolve("offsets.dat").toString());
        p.setProperty("offset.flush.interval.ms", "1000");
        p.setProperty("schema.history.internal", "io.debezium.storage.file.history.FileSchemaHistory");
        p.setProperty("schema.history.internal.file.filename", work.resolve("schema-history.dat").toString());
        p.setProperty("topic.prefix", "dbz");
        p.setProperty("database.ssl.mode", "disable");
        p.setProperty("driver.yearIsDateType", "false");
        p.setProperty("bigint.unsigned.handling.mode", "precise");
        p.setProperty("decimal.handling.mode", "string");
        p.setProperty("binary.handling.mode", "base64");
        p.setProperty("time.precision.mode", "adaptive_time_microseconds");
        p.setProperty("tombstones.on.delete", "false");
        p.setProperty("include.schema.changes", "false");
        p.setProperty("snapshot.mode", "initial");
        for (int i = 1; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq <= 0) {
                System.err.println("argument " + args[i] + " is not key=value");
                System.exit(2);
            }
            p.setProperty(args[i].substring(0, eq), args[i].substring(eq + 1));
        }

        DebeziumEngine<ChangeEvent<SourceRecord, SourceRecord>> engine = DebeziumEngine.create(Connect.class)
            .using(p)
            .using(new DebeziumEngine.ConnectorCallback() {
                @Override
                public void taskStarted() {
                    control("{\"control\":\"started\"}");
                }
            })
            .using((success, message, error) -> {
                if (error != null) {
                    error.printStackTrace();
                }
                control("{\"control\":\"stopped\",\"ok\":" + success + ",\"message\":" + quote(String.valueOf(message)) + "}");
            })
            .notifying(Launcher::handle)
            .build();
        ExecutorService exec = Executors.newSingleThreadExecutor();
        exec.execute(engine);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                engine.close();
            } catch (Exception e) {
                e.printStackTrace();
            }
        }));

        InputStream in = System.in;
        byte[] buf = new byte[256];
        while (in.read(buf) >= 0) {
            // wait for end of file
        }
        engine.close();
        exec.shutdown();
        exec.awaitTermination(30, TimeUnit.SECONDS);
        synchronized (Launcher.class) {
            out.flush();
        }
        System.exit(0);
    }

    private static void control(String line) {
        synchronized (Launcher.class) {
            try {
                out.write(line);
                out.write('\n');
                out.flush();
            } catch (Exception e) {
                e.printStackTrace();
            }
        }
    }

    private static void handle(List<ChangeEvent<SourceRecord, SourceRecord>> events,
                               DebeziumEngine.RecordCommitter<ChangeEvent<SourceRecord, SourceRecord>> committer)
            throws InterruptedException {
        StringBuilder sb = new StringBuilder();
        for (ChangeEvent<SourceRecord, SourceRecord> ev : events) {
            SourceRecord r = ev.value();
            if (r != null && r.value() instanceof Struct) {
                Struct v = (Struct) r.value();
                if (v.schema().field("op") != null) {
                    line(sb, r, v);
                }
            }
            committer.markProcessed(ev);
        }
        synchronized (Launcher.class) {
            try {
                out.write(sb.toString());
                out.flush();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }
        committer.markBatchFinished();
    }

    private static void line(StringBuilder sb, SourceRecord r, Struct v) {
        Struct src = v.getStruct("source");
        Struct row = v.getStruct("after") != null ? v.getStruct("after") : v.getStruct("before");
        sb.append("{\"db\":").append(quote(src.getString("db")));
        sb.append(",\"table\":").append(quote(src.getString("table")));
        sb.append(",\"op\":").append(quote(v.getString("op")));
        sb.append(",\"snapshot\":").append(quote(String.valueOf(src.get("snapshot"))));
        sb.append(",\"key\":");
        row(sb, r.key() instanceof Struct ? (Struct) r.key() : null);
        sb.append(",\"before\":");
        row(sb, v.getStruct("before"));
        sb.append(",\"after\":");
        row(sb, v.getStruct("after"));
        sb.append(",\"types\":{");
        if (row != null) {
            boolean first = true;
            for (Field f : row.schema().fields()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                Schema s = f.schema();
                sb.append(quote(f.name())).append(':')
                  .append(quote(s.type() + (s.name() != null ? " " + s.name() : "")));
            }
        }
        sb.append("}}\n");
    }

    private static void row(StringBuilder sb, Struct s) {
        if (s == null) {
            sb.append("null");
            return;
        }
        sb.append('{');
        boolean first = true;
        for (Field f : s.schema().fields()) {
            if (!first) {
                sb.append(',');
            }
            first = false;
            sb.append(quote(f.name())).append(':');
            value(sb, s.get(f));
        }
        sb.append('}');
    }

    private static void value(StringBuilder sb, Object o) {
        if (o == null) {
            sb.append("null");
        } else if (o instanceof BigDecimal) {
            sb.append(quote(((BigDecimal) o).toPlainString()));
        } else if (o instanceof Number || o instanceof Boolean) {
            sb.append(o.toString());
        } else if (o instanceof byte[]) {
            sb.append(quote(Base64.getEncoder().encodeToString((byte[]) o)));
        } else if (o instanceof ByteBuffer) {
            ByteBuffer b = ((ByteBuffer) o).duplicate();
            byte[] a = new byte[b.remaining()];
            b.get(a);
            sb.append(quote(Base64.getEncoder().encodeToString(a)));
        } else if (o instanceof Struct) {
            row(sb, (Struct) o);
        } else if (o instanceof List || o instanceof Map) {
            sb.append(quote(o.toString()));
        } else {
            sb.append(quote(o.toString()));
        }
    }

    static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c); // surrogate pairs pass through as UTF-16 → UTF-8 by the writer
                    }
            }
        }
        return b.append('"').toString();
    }
}

package weir.eostest;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Transactional scenarios of Apache Kafka's Java client, run against one
 * bootstrap address: TxnScenarios BOOTSTRAP PREFIX SCENARIO... runs each
 * scenario (topics and transactional ids are named PREFIX-...) and prints
 * one line per scenario, "RESULT name PASS" or "RESULT name FAIL reason";
 * the Go test (broker/brokertest/eostest) reads those lines. A scenario
 * checks what a read_committed and a read_uncommitted consumer see, so it
 * fails on a broker that exposes what it should not.
 */
public final class TxnScenarios {
    static String bootstrap;
    static String prefix;
    static final Duration WAIT = Duration.ofSeconds(60);
    /** What a passing scenario observed, printed after PASS. */
    static String note = "";

    public static void main(String[] args) {
        if (args.length < 3) {
            System.err.println("usage: TxnScenarios BOOTSTRAP PREFIX SCENARIO...");
            System.exit(2);
        }
        bootstrap = args[0];
        prefix = args[1];
        for (int i = 2; i < args.length; i++) {
            String name = args[i];
            long start = System.nanoTime();
            String result;
            note = "";
            try {
                switch (name) {
                    case "commit" -> commit();
                    case "abort" -> abort();
                    case "open_txn_holds_back" -> openTxnHoldsBack();
                    case "send_offsets" -> sendOffsets();
                    case "zombie_fenced" -> zombieFenced();
                    default -> throw new IllegalArgumentException("unknown scenario " + name);
                }
                result = "PASS " + (System.nanoTime() - start) / 1_000_000 + "ms" + (note.isEmpty() ? "" : " (" + note + ")");
            } catch (Throwable e) {
                System.err.println("scenario " + name + " failed:");
                e.printStackTrace(System.err);
                result = "FAIL " + describe(e);
            }
            System.out.println("RESULT " + name + " " + result);
            System.out.flush();
        }
        System.exit(0);
    }

    static String describe(Throwable e) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (b.length() > 0) b.append(" <- ");
            b.append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
        }
        return b.toString().replace('\n', ' ');
    }

    static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }

    // --- clients ---

    static Admin admin() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return Admin.create(p);
    }

    static void createTopics(int partitions, String... names) throws Exception {
        try (Admin a = admin()) {
            for (String n : names) {
                try {
                    a.createTopics(List.of(new NewTopic(n, Optional.of(partitions), Optional.empty()))).all().get();
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) throw e;
                }
            }
        }
    }

    static KafkaProducer<String, String> producer(String transactionalId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
        if (transactionalId != null) {
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        }
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<String, String> consumer(String group, boolean committed) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, committed ? "read_committed" : "read_uncommitted");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        if (group != null) p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        return new KafkaConsumer<>(p);
    }

    static List<TopicPartition> partitions(KafkaConsumer<?, ?> c, String topic) {
        List<TopicPartition> tps = new ArrayList<>();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (true) {
            var infos = c.partitionsFor(topic, WAIT);
            if (infos != null && !infos.isEmpty()) {
                infos.forEach(i -> tps.add(new TopicPartition(i.topic(), i.partition())));
                tps.sort((x, y) -> Integer.compare(x.partition(), y.partition()));
                return tps;
            }
            check(System.nanoTime() < deadline, "no partitions of " + topic);
        }
    }

    /** End offsets of topic as a consumer of that isolation level sees them (read_committed: the LSO). */
    static Map<TopicPartition, Long> endOffsets(String topic, boolean committed) {
        try (KafkaConsumer<String, String> c = consumer(null, committed)) {
            return c.endOffsets(partitions(c, topic), WAIT);
        }
    }

    /** Values of topic from the start to the end offsets of that isolation level, partition by partition in offset order. */
    static List<String> readAll(String topic, boolean committed) {
        try (KafkaConsumer<String, String> c = consumer(null, committed)) {
            List<TopicPartition> tps = partitions(c, topic);
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, WAIT);
            Map<TopicPartition, List<String>> got = new HashMap<>();
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (true) {
                boolean done = true;
                for (TopicPartition tp : tps) {
                    if (c.position(tp, WAIT) < end.get(tp)) done = false;
                }
                if (done) break;
                check(System.nanoTime() < deadline, "reading " + topic + " did not reach end offsets " + end);
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    got.computeIfAbsent(new TopicPartition(r.topic(), r.partition()), k -> new ArrayList<>()).add(r.value());
                }
            }
            List<String> out = new ArrayList<>();
            for (TopicPartition tp : tps) out.addAll(got.getOrDefault(tp, List.of()));
            return out;
        }
    }

    static List<String> values(String p, int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) out.add(p + i);
        return out;
    }

    // --- scenarios ---

    /** Ten records in one committed transaction: a read_committed consumer sees all ten. */
    static void commit() throws Exception {
        String topic = prefix + "-commit";
        createTopics(3, topic);
        try (KafkaProducer<String, String> p = producer(prefix + "-commit-tx")) {
            p.initTransactions();
            p.beginTransaction();
            for (String v : values("c-", 10)) p.send(new ProducerRecord<>(topic, v, v));
            p.commitTransaction();
        }
        List<String> got = readAll(topic, true);
        got.sort(null);
        List<String> want = values("c-", 10);
        want.sort(null);
        check(got.equals(want), "read_committed saw " + got + ", want " + want);
    }

    /**
     * An aborted transaction then a committed one on one partition:
     * read_committed sees only the committed records, read_uncommitted
     * sees both, and each transaction's marker takes an offset.
     */
    static void abort() throws Exception {
        String topic = prefix + "-abort";
        createTopics(1, topic);
        try (KafkaProducer<String, String> p = producer(prefix + "-abort-tx")) {
            p.initTransactions();
            p.beginTransaction();
            for (String v : values("a-", 5)) p.send(new ProducerRecord<>(topic, v));
            p.flush();
            p.abortTransaction();
            p.beginTransaction();
            for (String v : values("c-", 3)) p.send(new ProducerRecord<>(topic, v));
            p.commitTransaction();
        }
        List<String> committed = readAll(topic, true);
        check(committed.equals(values("c-", 3)), "read_committed saw " + committed + ", want [c-0, c-1, c-2]");
        List<String> all = readAll(topic, false);
        List<String> want = values("a-", 5);
        want.addAll(values("c-", 3));
        check(all.equals(want), "read_uncommitted saw " + all + ", want " + want);
        long end = endOffsets(topic, false).get(new TopicPartition(topic, 0));
        check(end == 10, "end offset " + end + ", want 10 (8 records and 2 markers)");
    }

    /**
     * An open transaction holds read_committed consumers back at its first
     * record (the last stable offset), also from records committed after
     * it by another producer; its commit releases everything in order.
     */
    static void openTxnHoldsBack() throws Exception {
        String topic = prefix + "-open";
        createTopics(1, topic);
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaProducer<String, String> open = producer(prefix + "-open-tx");
             KafkaProducer<String, String> other = producer(null)) {
            open.initTransactions();
            open.beginTransaction();
            for (String v : values("open-", 3)) open.send(new ProducerRecord<>(topic, v));
            open.flush();
            for (String v : values("after-", 2)) other.send(new ProducerRecord<>(topic, v)).get();

            List<String> want = values("open-", 3);
            want.addAll(values("after-", 2));
            List<String> all = readAll(topic, false);
            check(all.equals(want), "read_uncommitted saw " + all + ", want " + want);
            long lso = endOffsets(topic, true).get(tp);
            check(lso == 0, "read_committed end offset (LSO) " + lso + " with a transaction open at offset 0, want 0");
            try (KafkaConsumer<String, String> c = consumer(null, true)) {
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                ConsumerRecords<String, String> rs = c.poll(Duration.ofSeconds(2));
                check(rs.isEmpty(), "read_committed consumer got " + rs.count() + " records past an open transaction");
            }

            open.commitTransaction();
            List<String> committed = readAll(topic, true);
            check(committed.equals(want), "after the commit read_committed saw " + committed + ", want " + want);
            long end = endOffsets(topic, true).get(tp);
            check(end == 6, "read_committed end offset after the commit " + end + ", want 6");
        }
    }

    /**
     * Consume-transform-produce (KIP-447): input offsets are committed with
     * sendOffsetsToTransaction in the transaction that writes the output.
     * A first transaction is aborted: its output is hidden and its offsets
     * not committed, so a new consumer of the group reprocesses from the
     * start; afterwards the output holds each input once and the group's
     * committed offsets are the input's end.
     */
    static void sendOffsets() throws Exception {
        String in = prefix + "-cpt-in", out = prefix + "-cpt-out", group = prefix + "-cpt";
        int n = 30;
        createTopics(3, in, out);
        try (KafkaProducer<String, String> p = producer(null)) {
            for (String v : values("w-", n)) p.send(new ProducerRecord<>(in, v, v));
            p.flush();
        }
        int aborted = 0;
        try (KafkaProducer<String, String> tx = producer(prefix + "-cpt-tx")) {
            tx.initTransactions();
            try (KafkaConsumer<String, String> c = consumer(group, true)) {
                c.subscribe(List.of(in));
                ConsumerRecords<String, String> rs = pollSome(c);
                tx.beginTransaction();
                for (ConsumerRecord<String, String> r : rs) {
                    tx.send(new ProducerRecord<>(out, r.key(), r.value().toUpperCase()));
                }
                tx.sendOffsetsToTransaction(nextOffsets(rs), c.groupMetadata());
                tx.flush(); // the aborted records reach the log (abort drops unsent ones)
                tx.abortTransaction();
                aborted = rs.count();
            }
            try (Admin a = admin()) {
                var offs = a.listConsumerGroupOffsets(group, new ListConsumerGroupOffsetsOptions().requireStable(true))
                        .partitionsToOffsetAndMetadata().get();
                offs.values().removeIf(v -> v == null);
                check(offs.isEmpty(), "offsets of an aborted transaction were committed: " + offs);
            }
            int processed = 0;
            try (KafkaConsumer<String, String> c = consumer(group, true)) {
                c.subscribe(List.of(in));
                long deadline = System.nanoTime() + WAIT.toNanos();
                while (processed < n) {
                    check(System.nanoTime() < deadline, "processed " + processed + " of " + n + " input records");
                    ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
                    if (rs.isEmpty()) continue;
                    tx.beginTransaction();
                    for (ConsumerRecord<String, String> r : rs) {
                        tx.send(new ProducerRecord<>(out, r.key(), r.value().toUpperCase()));
                    }
                    tx.sendOffsetsToTransaction(nextOffsets(rs), c.groupMetadata());
                    tx.commitTransaction();
                    processed += rs.count();
                }
                check(processed == n, "processed " + processed + " records, want " + n + " (input read twice)");
            }
        }
        List<String> got = readAll(out, true);
        got.sort(null);
        List<String> want = new ArrayList<>();
        for (String v : values("w-", n)) want.add(v.toUpperCase());
        want.sort(null);
        check(got.equals(want), "read_committed output " + got + ", want each of " + want + " once");
        int raw = readAll(out, false).size();
        check(raw == n + aborted, "read_uncommitted output has " + raw + " records, want " + (n + aborted));
        Map<TopicPartition, Long> end = endOffsets(in, false);
        try (Admin a = admin()) {
            var offs = a.listConsumerGroupOffsets(group, new ListConsumerGroupOffsetsOptions().requireStable(true))
                    .partitionsToOffsetAndMetadata().get();
            for (var e : end.entrySet()) {
                OffsetAndMetadata om = offs.get(e.getKey());
                long at = om == null ? -1 : om.offset();
                check(at == e.getValue(), "group offset of " + e.getKey() + " is " + at + ", want " + e.getValue());
            }
        }
    }

    static ConsumerRecords<String, String> pollSome(KafkaConsumer<String, String> c) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (true) {
            ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
            if (!rs.isEmpty()) return rs;
            check(System.nanoTime() < deadline, "no input records");
        }
    }

    static Map<TopicPartition, OffsetAndMetadata> nextOffsets(ConsumerRecords<String, String> rs) {
        Map<TopicPartition, OffsetAndMetadata> m = new HashMap<>();
        for (TopicPartition tp : rs.partitions()) {
            List<ConsumerRecord<String, String>> l = rs.records(tp);
            m.put(tp, new OffsetAndMetadata(l.get(l.size() - 1).offset() + 1));
        }
        return m;
    }

    /**
     * Two producers with one transactional.id: the second's
     * initTransactions fences the first (its open transaction is aborted
     * and its commit fails with ProducerFencedException or
     * InvalidProducerEpochException); only the second's records are
     * committed.
     */
    static void zombieFenced() throws Exception {
        String topic = prefix + "-zombie", tid = prefix + "-zombie-tx";
        createTopics(1, topic);
        try (KafkaProducer<String, String> zombie = producer(tid)) {
            zombie.initTransactions();
            zombie.beginTransaction();
            zombie.send(new ProducerRecord<>(topic, "zombie-0")).get();
            try (KafkaProducer<String, String> fresh = producer(tid)) {
                fresh.initTransactions();
                fresh.beginTransaction();
                fresh.send(new ProducerRecord<>(topic, "fresh-0"));
                fresh.commitTransaction();
            }
            Throwable fenced = null;
            try {
                zombie.send(new ProducerRecord<>(topic, "zombie-1"));
                zombie.commitTransaction();
            } catch (KafkaException e) {
                fenced = e;
            }
            check(fenced != null, "the zombie producer committed after a new producer took its transactional.id");
            boolean ok = false;
            for (Throwable c = fenced; c != null; c = c.getCause()) {
                if (c instanceof ProducerFencedException || c instanceof InvalidProducerEpochException) ok = true;
            }
            check(ok, "zombie's commit failed with " + describe(fenced) + ", want ProducerFencedException or InvalidProducerEpochException");
            note = "zombie's commit: " + describe(fenced);
        }
        List<String> got = readAll(topic, true);
        check(got.equals(List.of("fresh-0")), "read_committed saw " + got + ", want [fresh-0]");
    }

}

package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/kafkaclient/partition"
	"weir/internal/testkit"
)

// runWeir runs the weir root command in-process with args and stdin.
func runWeir(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return runWeirCtx(ctx, stdin, args...)
}

func runWeirCtx(ctx context.Context, stdin string, args ...string) (string, string, error) {
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetArgs(append(args, "--log-level", "error"))
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	err := cmd.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

func mustWeir(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := runWeir(t, stdin, args...)
	if err != nil {
		t.Fatalf("weir %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

func TestTopicLifecycle(t *testing.T) {
	b := startTestBroker(t, 1, kmsg.CreateTopics, kmsg.DeleteTopics, kmsg.DescribeConfigs, kmsg.IncrementalAlterConfigs)
	out := mustWeir(t, "", "topic", "create", "orders", "--brokers", b, "--partitions", "3", "--config", "retention.ms=1000000")
	if !strings.Contains(out, `created topic "orders" with 3 partitions`) {
		t.Fatalf("create output: %q", out)
	}
	out = mustWeir(t, "", "topic", "list", "--brokers", b)
	if !regexpLine(out, `orders\s+3\s+1`) {
		t.Fatalf("list output lacks orders with 3 partitions, 1 replica:\n%s", out)
	}
	out = mustWeir(t, "", "topic", "describe", "orders", "--brokers", b)
	for _, want := range []string{"Topic: orders", "PartitionCount: 3", "ReplicationFactor: 1", "retention.ms=1000000", "Partition: 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	mustWeir(t, "", "topic", "alter-config", "orders", "--brokers", b, "--set", "cleanup.policy=compact", "--delete", "retention.ms")
	out = mustWeir(t, "", "topic", "describe", "orders", "--brokers", b)
	if !strings.Contains(out, "cleanup.policy=compact") || strings.Contains(out, "retention.ms") {
		t.Errorf("after alter-config, describe shows:\n%s", out)
	}

	_, _, err := runWeir(t, "", "topic", "create", "orders", "--brokers", b)
	if err == nil || !strings.Contains(err.Error(), `topic "orders" already exists`) || !strings.Contains(err.Error(), "--if-not-exists") {
		t.Fatalf("creating twice: err = %v", err)
	}
	mustWeir(t, "", "topic", "create", "orders", "--brokers", b, "--if-not-exists")

	out = mustWeir(t, "", "topic", "delete", "orders", "--brokers", b)
	if !strings.Contains(out, `deleted topic "orders"`) {
		t.Fatalf("delete output %q", out)
	}
	_, _, err = runWeir(t, "", "topic", "describe", "orders", "--brokers", b)
	if err == nil || !strings.Contains(err.Error(), `topic "orders" does not exist`) {
		t.Fatalf("describe after delete: err = %v", err)
	}
	_, _, err = runWeir(t, "", "topic", "delete", "orders", "--brokers", b)
	if err == nil || !strings.Contains(err.Error(), `"orders"`) {
		t.Fatalf("deleting a missing topic: err = %v", err)
	}
	_, _, err = runWeir(t, "", "topic", "alter-config", "orders", "--brokers", b)
	if err == nil || !strings.Contains(err.Error(), "--set") {
		t.Fatalf("alter-config with nothing: err = %v", err)
	}
}

func TestUnreachableBrokerSaysWhatToDo(t *testing.T) {
	_, _, err := runWeir(t, "", "topic", "list", "--brokers", "127.0.0.1:1", "--timeout", "1s")
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || !strings.Contains(err.Error(), "weir broker") {
		t.Fatalf("err = %v, want one naming the brokers and what to do", err)
	}
}

func TestProduceConsumeKeyed(t *testing.T) {
	const parts = 4
	b := startTestBroker(t, parts) // "keyed" is auto-created with 4 partitions
	var in strings.Builder
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&in, "user-%d:event %d with:colon\n", i%37, i)
	}
	mustWeir(t, in.String(), "produce", "keyed", "--brokers", b, "--key-separator", ":", "--headers", "src=test,env=ci", "--acks", "1", "--compression", "zstd")

	// list and describe need only Metadata (and show configs if they can).
	if out := mustWeir(t, "", "topic", "list", "--brokers", b); !regexpLine(out, `keyed\s+4\s+1`) {
		t.Errorf("topic list:\n%s", out)
	}
	desc := mustWeir(t, "", "topic", "describe", "keyed", "--brokers", b)
	if !strings.Contains(desc, "Topic: keyed") || !strings.Contains(desc, "PartitionCount: 4") || !regexpLine(desc, `\s*Partition: 3\s+Leader: \d+\s+Replicas: \d+\s+Isr: \d+`) {
		t.Errorf("topic describe:\n%s", desc)
	}

	out := mustWeir(t, "", "consume", "keyed", "--brokers", b, "--from-beginning", "-e", "--format", `%p|%o|%k|%v|%h\n`)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 500 {
		t.Fatalf("consumed %d lines, want 500:\n%s", len(lines), out)
	}
	lastOffset := map[string]int{}
	lastEvent := map[string]int{}
	for _, l := range lines {
		f := strings.Split(l, "|")
		if len(f) != 5 {
			t.Fatalf("bad line %q", l)
		}
		var p, off, ev int
		fmt.Sscan(f[0], &p)
		fmt.Sscan(f[1], &off)
		if want := partition.ForKey([]byte(f[2]), parts); p != want {
			t.Errorf("key %s on partition %d, want murmur2 partition %d", f[2], p, want)
		}
		if _, err := fmt.Sscanf(f[3], "event %d with:colon", &ev); err != nil {
			t.Errorf("value %q: %v", f[3], err)
		}
		if f[4] != "src=test,env=ci" {
			t.Errorf("headers %q", f[4])
		}
		if prev, ok := lastOffset[f[0]]; ok && off != prev+1 {
			t.Errorf("partition %s offsets jump %d -> %d", f[0], prev, off)
		}
		if prev, ok := lastEvent[f[2]]; ok && ev <= prev {
			t.Errorf("key %s out of order: event %d after %d", f[2], ev, prev)
		}
		lastOffset[f[0]], lastEvent[f[2]] = off, ev
	}
}

func TestProduceExplicitPartitionAndErrors(t *testing.T) {
	b := startTestBroker(t, 3) // "p" is auto-created with 3 partitions
	mustWeir(t, "a\nb\nc\n", "produce", "p", "--brokers", b, "--partition", "2", "--key", "k")
	out := mustWeir(t, "", "consume", "p", "--brokers", b, "--partition", "2", "--offset", "earliest", "-n", "3", "--format", `%p:%k:%v;`)
	if out != "2:k:a;2:k:b;2:k:c;" {
		t.Fatalf("partition 2 holds %q", out)
	}
	// A partition that does not exist fails every record, with line numbers.
	_, errOut, err := runWeir(t, "x\ny\n", "produce", "p", "--brokers", b, "--partition", "9", "--timeout", "5s")
	if err == nil || !strings.Contains(err.Error(), "2 of 2 records failed; first at line 1") || !strings.Contains(errOut, "line 2:") {
		t.Fatalf("err = %v, stderr %q", err, errOut)
	}
	// A line without the separator is reported by number; the others go.
	_, _, err = runWeir(t, "k1=v1\nk2=v2\nnosep\nk4=v4\n", "produce", "p", "--brokers", b, "--key-separator", "=")
	if err == nil || !strings.Contains(err.Error(), "first at line 3") || !strings.Contains(err.Error(), `no key separator "="`) {
		t.Fatalf("missing separator: err = %v", err)
	}
	out = mustWeir(t, "", "consume", "p", "--brokers", b, "--from-beginning", "-e", "--format", `%k `)
	for _, k := range []string{"k1", "k2", "k4"} {
		if !strings.Contains(out, k+" ") {
			t.Errorf("record %s missing after a bad line: %q", k, out)
		}
	}
	// Bad flags name themselves.
	for _, args := range [][]string{
		{"produce", "p", "--acks", "2"},
		{"produce", "p", "--compression", "brotli"},
		{"produce", "p", "--headers", "novalue"},
		{"consume", "p", "--offset", "soon"},
		{"consume", "p", "--format", "%q"},
	} {
		_, _, err := runWeir(t, "", append(args, "--brokers", b)...)
		if err == nil || !strings.Contains(err.Error(), "--"+strings.TrimPrefix(args[2], "--")) {
			t.Errorf("weir %v: err = %v, want it to name the flag", args, err)
		}
	}
	_, _, err = runWeir(t, "", "consume", "nope", "--brokers", b, "-e")
	if err == nil || !strings.Contains(err.Error(), `topic "nope" does not exist`) {
		t.Errorf("consume of a missing topic: err = %v", err)
	}
	_, _, err = runWeir(t, "", "consume", "p", "--brokers", b, "--partition", "7")
	if err == nil || !strings.Contains(err.Error(), "no partition 7") {
		t.Errorf("consume of a missing partition: err = %v", err)
	}
}

func TestConsumeOffsetsCountAndInterrupt(t *testing.T) {
	b := startTestBroker(t, 1)
	var in strings.Builder
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&in, "v%d\n", i)
	}
	mustWeir(t, in.String(), "produce", "o", "--brokers", b)
	out := mustWeir(t, "", "consume", "o", "--brokers", b, "--offset", "10", "-n", "3", "--format", `%o=%v,`)
	if out != "10=v10,11=v11,12=v12," {
		t.Fatalf("--offset 10 -n 3 gave %q", out)
	}
	// -e from latest ends at once with nothing.
	if out := mustWeir(t, "", "consume", "o", "--brokers", b, "-e"); out != "" {
		t.Fatalf("-e from latest printed %q", out)
	}
	// Waiting at the end, a cancelled context (what SIGINT does) stops the
	// command cleanly.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := runWeirCtx(ctx, "", "consume", "o", "--brokers", b)
		done <- err
	}()
	time.AfterFunc(300*time.Millisecond, cancel)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("interrupted consume returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("consume did not stop after cancellation")
	}
}

func TestBenchCommands(t *testing.T) {
	b := startTestBroker(t, 2)
	out := mustWeir(t, "", "bench", "produce", "--brokers", b, "--topic", "bt", "--records", "20000", "--record-size", "50", "--partitions", "0", "--report-interval", "20ms")
	if !strings.Contains(out, "20000 records sent,") || !strings.Contains(out, "ms 99.9th") {
		t.Fatalf("bench produce output:\n%s", out)
	}
	out = mustWeir(t, "", "bench", "consume", "--brokers", b, "--topic", "bt", "--records", "20000")
	if !strings.Contains(out, "20000 records consumed") || !strings.Contains(out, "0.95 MB,") {
		t.Fatalf("bench consume output:\n%s", out)
	}
}

func TestFormatParsing(t *testing.T) {
	f, err := parseRecordFormat(`%t/%p@%o %K:%k %S:%v %T [%h] 100%%\t\n`)
	if err != nil {
		t.Fatal(err)
	}
	r := &kgo.Record{
		Topic: "t", Partition: 3, Offset: 42, Key: []byte("kk"), Value: nil,
		Timestamp: time.UnixMilli(1700000000123),
		Headers:   []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("2")}},
	}
	if got, want := string(f.append(nil, r)), "t/3@42 2:kk -1: 1700000000123 [a=1,b=2] 100%\t\n"; got != want {
		t.Fatalf("formatted %q, want %q", got, want)
	}
	for _, bad := range []string{"%", "%x", "abc%"} {
		if _, err := parseRecordFormat(bad); err == nil {
			t.Errorf("format %q accepted", bad)
		}
	}
}

func TestKcatReadsWeirAndAgreesOnPartitions(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat not installed")
	}
	const parts = 6
	b := startTestBroker(t, parts) // topics are auto-created with 6 partitions
	var in strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&in, "key%d\tvalue %d\n", i, i)
	}
	mustWeir(t, in.String(), "produce", "kc", "--brokers", b, "--key-separator", "\t", "--compression", "lz4")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, kcat, "-C", "-b", b, "-t", "kc", "-o", "beginning", "-e", "-q", "-f", `%p %k %s\n`).CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -C: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 200 {
		t.Fatalf("kcat read %d records, want 200:\n%s", len(lines), out)
	}
	for _, l := range lines {
		var p int
		var k, v1, v2 string
		fmt.Sscan(l, &p, &k, &v1, &v2)
		if p != partition.ForKey([]byte(k), parts) {
			t.Errorf("kcat sees key %s on partition %d, want %d", k, p, partition.ForKey([]byte(k), parts))
		}
	}

	// kcat with librdkafka's Java-compatible partitioner puts keys where
	// weir's partitioner does.
	var kin strings.Builder
	for i := 0; i < 100; i++ {
		fmt.Fprintf(&kin, "id-%d:x\n", i)
	}
	p := exec.CommandContext(ctx, kcat, "-P", "-b", b, "-t", "kc2", "-K", ":", "-X", "partitioner=murmur2_random")
	p.Stdin = strings.NewReader(kin.String())
	if out, err := p.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v\n%s", err, out)
	}
	out2 := mustWeir(t, "", "consume", "kc2", "--brokers", b, "--from-beginning", "-e", "--format", `%p %k\n`)
	got := strings.Split(strings.TrimSpace(out2), "\n")
	if len(got) != 100 {
		t.Fatalf("read %d kcat records, want 100", len(got))
	}
	for _, l := range got {
		var p int
		var k string
		fmt.Sscan(l, &p, &k)
		if p != partition.ForKey([]byte(k), parts) {
			t.Errorf("kcat murmur2_random put %s on %d, weir would use %d", k, p, partition.ForKey([]byte(k), parts))
		}
	}
}

// A partition whose last entry is a transaction marker (not a record) must
// still count as read to the end with -e.
func TestConsumeExitAtEndAfterTransactionMarker(t *testing.T) {
	b := startTestBroker(t, 1, kmsg.InitProducerID, kmsg.AddPartitionsToTxn, kmsg.EndTxn, kmsg.WriteTxnMarkers)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b), kgo.TransactionalID("weir-test-tx"), kgo.DefaultProduceTopic("tx"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"a", "b", "c"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	out := mustWeir(t, "", "consume", "tx", "--brokers", b, "--from-beginning", "-e", "--format", `%o:%v `)
	if out != "0:a 1:b 2:c " {
		t.Fatalf("consumed %q", out)
	}
}

// Every codec and acks setting of weir produce round-trips through the
// broker byte for byte (including a "\r" and an empty line).
func TestProduceCodecsAndAcks(t *testing.T) {
	b := startTestBroker(t, 2)
	var in strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&in, "line %d %s\n", i, strings.Repeat("x", i%50))
	}
	in.WriteString("carriage\r\n\nlast line without newline")
	want := strings.Split(in.String(), "\n")
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		for _, acks := range []string{"0", "1", "all"} {
			topic := "c-" + codec + "-" + acks
			mustWeir(t, in.String(), "produce", topic, "--brokers", b, "--compression", codec, "--acks", acks, "--key", "same")
			// One key: every record on one partition, in input order.
			// With acks=0 the broker may still be appending when produce
			// exits, so poll until the whole input is there.
			var got []string
			testkit.CheckFor(t, 10*time.Second, func() error {
				out := mustWeir(t, "", "consume", topic, "--brokers", b, "--from-beginning", "-e", "--format", `%v\n`)
				got = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
				if len(got) < len(want) && acks == "0" {
					return fmt.Errorf("%d records, want %d", len(got), len(want))
				}
				return nil
			})
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s: consumed %d records differing from the %d produced", topic, len(got), len(want))
			}
		}
	}
}

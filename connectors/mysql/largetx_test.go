package mysql

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/connectors/mysql/mysqltest"
)

const largeTxRows = 1_000_000

// largeTxTable creates table t with largeTxRows rows and a marker table m.
func largeTxTable(e *env) {
	e.exec("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, pad CHAR(20) NOT NULL)", "CREATE TABLE m (id INT PRIMARY KEY)",
		fmt.Sprintf("INSERT INTO t SELECT seq, 0, 'some padding' FROM seq_1_to_%d", largeTxRows))
}

// TestLargeTransaction: one transaction updating 1,000,000 rows streams
// through the source task into the broker while the server kills the
// binlog dump once in its middle: the source resumes inside the
// transaction (re-reading it and dropping the records it emitted), and
// the topic ends up with every change exactly once (each change index of
// the transaction's versions once, no other record), tx_end on the last
// only, and no Poll error but the kill's (no timeout while the server
// executes the statement or while the stream runs).
func TestLargeTransaction(t *testing.T) {
	if testing.Short() {
		t.Skip("slow test")
	}
	start := time.Now()
	e := newEnv(t)
	largeTxTable(e)
	e.b.CreateTopic(e.topic("t"), 3, nil)
	cfg := e.config("largetx")
	cfg.SnapshotMode = "never"
	r := e.run(cfg)
	testbroker.CheckFor(t, 60*time.Second, func() error {
		if !r.src.snapDone() {
			return fmt.Errorf("not streaming yet")
		}
		return nil
	})
	t.Logf("table filled and source streaming %v in", time.Since(start).Round(time.Millisecond))
	upd := time.Now()
	e.exec("UPDATE t SET v = v + 1")
	t.Logf("UPDATE of %d rows committed in %v", largeTxRows, time.Since(upd).Round(time.Millisecond))
	topic := e.topic("t")
	testbroker.CheckFor(t, 120*time.Second, func() error {
		if n := e.endOffset(topic); n < largeTxRows/3 {
			return fmt.Errorf("%d records in %s", n, topic)
		}
		return nil
	})
	testbroker.CheckFor(t, 30*time.Second, func() error {
		if n := e.db.KillConnections(t, func(user, cmd string) bool {
			return user == mysqltest.CDCUser && strings.Contains(cmd, "Binlog Dump")
		}); n == 0 {
			return fmt.Errorf("no binlog dump connection to kill yet")
		}
		return nil
	})
	t.Logf("binlog dump killed with %d records in the topic, %v after the commit", e.endOffset(topic), time.Since(upd).Round(time.Millisecond))
	e.exec("INSERT INTO m VALUES (1)")
	e.waitRecords(e.topic("m"), 1, 180*time.Second)
	if n := e.endOffset(topic); n != largeTxRows {
		t.Fatalf("%s holds %d records after the next transaction's, want exactly %d", topic, n, largeTxRows)
	}
	t.Logf("all %d changes in the topic %v after the commit", largeTxRows, time.Since(upd).Round(time.Millisecond))
	// No timeout anywhere: the one Poll error is the killed dump's.
	if n := counterValue(r.src.sc.Metrics().ErrorCounter("poll")); n != 1 {
		t.Errorf("%v Poll errors, want 1 (the killed binlog dump)", n)
	}

	// Every change index of the transaction exactly once.
	cl := e.b.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	seen := make([]bool, largeTxRows)
	var count int64 = -1
	var last *kgo.Record
	got := 0
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	for got < largeTxRows {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records: %v", got, largeTxRows, err)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			got++
			var ver int64
			for _, h := range rec.Headers {
				if h.Key == HeaderVersion {
					ver, _ = strconv.ParseInt(string(h.Value), 10, 64)
				}
			}
			c, idx := uint64(ver)>>versionChangeBits, int(ver&maxVersionChange)
			if count == -1 {
				count = int64(c)
			}
			switch {
			case int64(c) != count:
				t.Fatalf("%s/%d@%d: version %d names GTID count %d, the others %d", rec.Topic, rec.Partition, rec.Offset, ver, c, count)
			case idx >= largeTxRows || seen[idx]:
				t.Fatalf("%s/%d@%d: change index %d twice or out of range", rec.Topic, rec.Partition, rec.Offset, idx)
			}
			seen[idx] = true
			if idx == largeTxRows-1 {
				last = rec
			}
			if idx%99991 == 0 {
				if d := e.decode(rec); d.source["tx_end"] != false || d.op != "u" {
					t.Fatalf("change %d: op %s, tx_end %v; want u, false", idx, d.op, d.source["tx_end"])
				}
			}
		})
	}
	if d := e.decode(last); d.source["tx_end"] != true || fmt.Sprint(d.source["tx_seq"]) != strconv.Itoa(largeTxRows) {
		t.Errorf("last change: tx_end %v, tx_seq %v; want true, %d", d.source["tx_end"], d.source["tx_seq"], largeTxRows)
	}
	t.Logf("every change once, tx_end on the last; %v in all", time.Since(start).Round(time.Millisecond))
}

// peakRSS resets the process's peak resident set size (Linux clear_refs
// 5) and returns a function reading it back (VmHWM), in MiB.
func peakRSS(tb testing.TB) func() float64 {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Skipf("cannot reset the peak RSS: %v", err)
	}
	return func() float64 { return procStatusMiB(tb, "VmHWM:") }
}

// procStatusMiB reads a kB field of /proc/self/status, in MiB.
func procStatusMiB(tb testing.TB, field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if f := strings.Fields(string(l)); len(f) >= 2 && f[0] == field {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	tb.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// BenchmarkLargeTransaction: the source alone (Poll, records discarded)
// streaming 1,000,000 row updates, as one transaction (one_tx) and as the
// baseline of 1,000 transactions of 1,000 rows (1000_tx); peak_rss_MiB is
// the process's peak RSS during the stream (VmHWM, reset before it; the
// MariaDB server is another process), rss_before_MiB the RSS before it.
func BenchmarkLargeTransaction(b *testing.B) {
	e := newEnv(b)
	largeTxTable(e)
	pos := func() Position {
		st := e.db.Query(b, "", "SHOW MASTER STATUS")[0]
		p, _ := strconv.ParseUint(st[1], 10, 32)
		from := Position{File: st[0], Pos: uint32(p)}
		from.GTID = e.db.Query(b, "", fmt.Sprintf("SELECT BINLOG_GTID_POS('%s', %d)", from.File, from.Pos))[0][0]
		return from
	}
	one := pos()
	e.exec("UPDATE t SET v = v + 1")
	many := pos()
	for i := 0; i < largeTxRows; i += 1000 {
		e.exec(fmt.Sprintf("UPDATE t SET v = v + 1 WHERE id BETWEEN %d AND %d", i+1, i+1000))
	}
	end := pos()
	for _, c := range []struct {
		name     string
		from, to Position
	}{{"one_tx", one, many}, {"1000_tx", many, end}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				cfg := e.config(fmt.Sprintf("largetx-%s-%d", c.name, i))
				src := New(cfg)
				if err := src.Open(context.Background(), &testContext{name: cfg.Name}, map[string][]byte{SourcePartition: c.from.encode()}); err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				debug.FreeOSMemory()
				before := procStatusMiB(b, "VmRSS:")
				peak := peakRSS(b)
				t0 := time.Now()
				got := 0
				var buf []connectors.SourceRecord
				for got < largeTxRows {
					var err error
					if buf, err = src.Poll(context.Background(), buf[:0]); err != nil {
						b.Fatal(err)
					}
					for _, r := range buf {
						if r.Topic == e.topic("t") {
							got++
						}
					}
				}
				el := time.Since(t0)
				b.ReportMetric(peak(), "peak_rss_MiB")
				b.ReportMetric(before, "rss_before_MiB")
				b.ReportMetric(float64(got)/el.Seconds(), "rows/s")
				src.Close()
			}
		})
	}
}

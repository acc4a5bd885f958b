package mysql

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gmysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors"
	"weir/connectors/mysql/mysqltest"
	"weir/internal/testkit"
)

// Benchmarks (see BENCHMARKS.md, "connectors/mysql"). Each reports a
// rate as a custom metric; run with -benchtime=1x -count=5 and take the
// median.

const benchTable = `CREATE TABLE t (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(40), c DECIMAL(10,2), d DATETIME,
	e BIGINT, f VARCHAR(20), g TINYINT NOT NULL, h DOUBLE, i TEXT)`

func benchRows(from, to int) string {
	return fmt.Sprintf(`INSERT INTO t SELECT seq, seq %% 1000, CONCAT('row-', seq), seq / 100,
		'2024-01-01 00:00:00' + INTERVAL seq SECOND, seq * 1000, 'f', seq %% 100, seq / 7, 'some text' FROM seq_%d_to_%d`, from, to)
}

// endOffset is the sum of the end offsets of topic's partitions.
func (e *env) endOffset(topic string) int64 {
	adm := kadm.NewClient(e.b.Client())
	ends, err := adm.ListEndOffsets(context.Background(), topic)
	if err != nil {
		return 0
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			n += o.Offset
		}
	})
	return n
}

func (e *env) waitEnd(topic string, n int64, timeout time.Duration) {
	e.t.Helper()
	testkit.CheckFor(e.t, timeout, func() error {
		if got := e.endOffset(topic); got < n {
			return fmt.Errorf("%s: %d records, want %d", topic, got, n)
		}
		return nil
	})
}

// BenchmarkSnapshot: a 200,000-row, 10-column table snapshotted into a
// topic of weir's broker (Avro, registry), until the broker acknowledged
// every row.
func BenchmarkSnapshot(b *testing.B) {
	const rows = 200000
	e := newEnv(b)
	e.exec(benchTable, benchRows(1, rows))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cfg := e.config(fmt.Sprintf("snap%d", i))
		cfg.ServerName = fmt.Sprintf("snap%d", i)
		topic := cfg.withDefaults().TableTopic(e.name, "t")
		start := time.Now()
		r := e.run(cfg)
		e.waitEnd(topic, rows, 5*time.Minute)
		el := time.Since(start)
		r.stop()
		b.ReportMetric(rows/el.Seconds(), "rows/s")
	}
}

// streamFixture writes n rows (1,000-row transactions) to a table and
// returns the binlog position before them.
func streamFixture(e *env, n int) Position {
	e.exec(benchTable)
	st := e.db.Query(e.t, "", "SHOW MASTER STATUS")[0]
	pos, _ := strconv.ParseUint(st[1], 10, 32)
	p := Position{File: st[0], Pos: uint32(pos)}
	for i := 1; i <= n; i += 1000 {
		e.exec(benchRows(i, i+999))
	}
	return p
}

// BenchmarkBinlogSyncerRaw is the baseline: go-mysql's BinlogSyncer alone
// parsing the same row events (no conversion, encoding or broker).
func BenchmarkBinlogSyncerRaw(b *testing.B) {
	const n = 200000
	e := newEnv(b)
	from := streamFixture(e, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sy := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{ServerID: uint32(9000 + i), Flavor: gmysql.MariaDBFlavor,
			Host: e.db.Host, Port: uint16(e.db.Port), User: mysqltest.AdminUser, Password: mysqltest.AdminPassword})
		start := time.Now()
		bs, err := sy.StartSync(gmysql.Position{Name: from.File, Pos: from.Pos})
		if err != nil {
			b.Fatal(err)
		}
		rows := 0
		for rows < n {
			ev, err := bs.GetEvent(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if re, ok := ev.Event.(*replication.RowsEvent); ok && string(re.Table.Table) == "t" {
				rows += len(re.Rows)
			}
		}
		el := time.Since(start)
		sy.Close()
		b.ReportMetric(float64(rows)/el.Seconds(), "rows/s")
	}
}

// BenchmarkStreamSource: the source alone (Poll: decode, convert, Avro
// encode, positions) over the same row events, records discarded.
func BenchmarkStreamSource(b *testing.B) {
	const n = 200000
	e := newEnv(b)
	from := streamFixture(e, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cfg := e.config(fmt.Sprintf("poll%d", i))
		src := New(cfg)
		if err := src.Open(context.Background(), &testContext{name: cfg.Name}, map[string][]byte{SourcePartition: from.encode()}); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		got := 0
		var buf []connectors.SourceRecord
		for got < n {
			var err error
			buf, err = src.Poll(context.Background(), buf[:0])
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range buf {
				if r.Value != nil && r.Topic == e.topic("t") {
					got++
				}
			}
		}
		el := time.Since(start)
		src.Close()
		b.ReportMetric(float64(got)/el.Seconds(), "rows/s")
	}
}

// BenchmarkStreamEndToEnd: the source task with weir's broker: rows
// written in 1,000-row transactions while it streams, until the broker
// acknowledged all of them. The rate includes MariaDB's own insert time
// (reported as insert_rows/s) when that is the slower side.
func BenchmarkStreamEndToEnd(b *testing.B) {
	const n = 200000
	e := newEnv(b)
	e.exec(benchTable)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.exec("TRUNCATE TABLE t")
		cfg := e.config(fmt.Sprintf("stream%d", i))
		cfg.ServerName = fmt.Sprintf("stream%d", i)
		topic := cfg.withDefaults().TableTopic(e.name, "t")
		r := e.run(cfg)
		testkit.CheckFor(b, time.Minute, func() error {
			if !r.src.snapDone() {
				return errors.New("snapshot not done")
			}
			return nil
		})
		start := time.Now()
		for j := 1; j <= n; j += 1000 {
			e.exec(benchRows(j, j+999))
		}
		ins := time.Since(start)
		e.waitEnd(topic, n, 5*time.Minute)
		el := time.Since(start)
		r.stop()
		b.ReportMetric(n/el.Seconds(), "rows/s")
		b.ReportMetric(n/ins.Seconds(), "insert_rows/s")
	}
}

// BenchmarkLag: rows committed at 5,000 rows/s (50-row transactions every
// 10 ms) for 10 s while the source streams; lag = time the record is
// read from the topic by a consumer − commit time.
func BenchmarkLag(b *testing.B) {
	e := newEnv(b)
	e.exec("CREATE TABLE t (id INT PRIMARY KEY, committed_us BIGINT NOT NULL, pad VARCHAR(100))")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.exec("TRUNCATE TABLE t")
		cfg := e.config(fmt.Sprintf("lag%d", i))
		cfg.ServerName = fmt.Sprintf("lag%d", i)
		topic := cfg.withDefaults().TableTopic(e.name, "t")
		r := e.run(cfg)
		testkit.CheckFor(b, time.Minute, func() error {
			if !r.src.snapDone() {
				return errors.New("snapshot not done")
			}
			return nil
		})
		total := 50000
		commitAt := make([]time.Time, total+1)
		cl := e.b.Client(kgo.ConsumeTopics(topic), kgo.FetchMaxWait(20*time.Millisecond), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		seenc := make(chan map[int]time.Time, 1)
		go func() {
			seen := map[int]time.Time{}
			for len(seen) < total {
				fs := cl.PollFetches(context.Background())
				now := time.Now()
				fs.EachRecord(func(r *kgo.Record) {
					if r.Value == nil {
						return
					}
					_, k, err := e.serde.Decode(context.Background(), r.Key)
					if err == nil {
						seen[int(k.(map[string]any)["id"].(int32))] = now
					}
				})
			}
			seenc <- seen
		}()
		c, err := client.Connect(e.db.Addr(), mysqltest.AdminUser, mysqltest.AdminPassword, e.name)
		if err != nil {
			b.Fatal(err)
		}
		tick := time.NewTicker(10 * time.Millisecond)
		start := time.Now()
		for id := 1; id <= total; {
			<-tick.C
			first := id
			if _, err := c.Execute("BEGIN"); err != nil {
				b.Fatal(err)
			}
			q := "INSERT INTO t VALUES "
			for k := 0; k < 50; k++ {
				if k > 0 {
					q += ","
				}
				q += fmt.Sprintf("(%d, 0, 'x')", id)
				id++
			}
			if _, err := c.Execute(q); err != nil {
				b.Fatal(err)
			}
			now := time.Now() // just before COMMIT: lag is not understated
			for k := first; k < id; k++ {
				commitAt[k] = now
			}
			if _, err := c.Execute("COMMIT"); err != nil {
				b.Fatal(err)
			}
		}
		rate := float64(total) / time.Since(start).Seconds()
		tick.Stop()
		c.Close()
		seen := <-seenc
		lags := make([]time.Duration, 0, total)
		for id, at := range seen {
			lags = append(lags, at.Sub(commitAt[id]))
		}
		r.stop()
		b.ReportMetric(rate, "rows/s")
		b.ReportMetric(float64(percentile(lags, 0.50).Microseconds())/1000, "p50_ms")
		b.ReportMetric(float64(percentile(lags, 0.99).Microseconds())/1000, "p99_ms")
		b.ReportMetric(float64(percentile(lags, 1).Microseconds())/1000, "max_ms")
	}
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[int(float64(len(d)-1)*p)]
}

package cdces_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"weir/broker/brokertest/testbroker"
	"weir/connectors/elasticsearch/searchtest"
	"weir/connectors/mysql/mysqltest"
)

// BenchmarkCommitToSearchLag measures issue 9's end-to-end lag: rows
// committed to MariaDB at a steady rate (5,000 rows/s: 50-row INSERT
// transactions every 10 ms, for 10 s) until each one is visible to a
// search of the index (the index's normal 1 s refresh, no forced
// refresh). The commit time is taken when the INSERT's autocommit
// returns to the client; a row is visible when a search (every 25 ms, a
// size-0 histogram of ids in buckets of one transaction) counts every row
// of its transaction — an upper bound for the rows that showed earlier. It runs the example's pipeline (snapshot
// of an empty table, then the binlog; measured after a warm-up row is
// searchable) once, whatever b.N is
// (WEIR_LAG_RATE=1000 runs it at another rate):
//
//	go test -run '^$' -bench CommitToSearchLag -benchtime 1x ./examples/mysql-cdc-to-es/
func BenchmarkCommitToSearchLag(b *testing.B) {
	const (
		batch    = 50
		duration = 10 * time.Second
	)
	rate := 5000 // WEIR_LAG_RATE overrides (a multiple of 100)
	if v, err := strconv.Atoi(os.Getenv("WEIR_LAG_RATE")); err == nil && v >= 100 {
		rate = v / 100 * 100
	}
	db := mysqltest.Shared(b)
	es := searchtest.Shared(b, searchtest.Elasticsearch7)
	br := testbroker.Start(b)
	e := &env{t: b, db: db, dbName: db.NewDatabase(b), esURL: es.URL, broker: br, reg: br.Registry(b), dir: b.TempDir(),
		index: fmt.Sprintf("weir-cdc-lag-%d", time.Now().UnixNano())}
	src, err := os.ReadFile("pipeline.hcl")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "pipeline.hcl"), src, 0o644); err != nil {
		b.Fatal(err)
	}
	es.MustDo(b, "PUT", "/"+e.index+"-customers", []byte(`{"settings":{"index.gc_deletes":"1h","number_of_replicas":0,"refresh_interval":"1s"},
		"mappings":{"properties":{"balance":{"type":"keyword"},"id":{"type":"long"}}}}`))
	db.Exec(b, e.dbName, `CREATE TABLE customers (id INT PRIMARY KEY, email VARCHAR(100) NOT NULL,
		name VARCHAR(100), qty INT NOT NULL, balance DECIMAL(10,2) NOT NULL)`,
		`CREATE TABLE order_lines (order_id INT, line INT, sku VARCHAR(20) NOT NULL, qty INT NOT NULL, PRIMARY KEY (order_id, line))`)
	r := e.run("weir-sink-lag")
	defer r.Stop()

	// Warm up: the sink's group has joined and a first row went through.
	db.Exec(b, e.dbName, "INSERT INTO customers VALUES (0,'warm@example.com','warm up',0,0)")
	testbroker.CheckFor(b, 60*time.Second, func() error {
		full, err := e.fullBatches(0, 1, 0)
		if err != nil || len(full) == 0 || full[0] != 0 {
			return fmt.Errorf("warm-up row not searchable yet (%v, %v)", full, err)
		}
		return nil
	})

	total := int(duration.Seconds()) * rate
	committed := make([]time.Time, total+1)
	seen := make([]time.Time, total+1)
	var mu sync.Mutex
	writerDone := make(chan error, 1)
	b.ResetTimer()
	go func() {
		c := db.Conn(b, e.dbName)
		tick := time.NewTicker(time.Second * batch / time.Duration(rate))
		defer tick.Stop()
		var sb strings.Builder
		for id := 1; id <= total; id += batch {
			<-tick.C
			sb.Reset()
			sb.WriteString("INSERT INTO customers VALUES ")
			for i := id; i < id+batch; i++ {
				if i > id {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, "(%d,'c%d@example.com','customer %d',%d,%d.%02d)", i, i, i, i%10, i, i%100)
			}
			if _, err := c.Execute(sb.String()); err != nil {
				writerDone <- err
				return
			}
			now := time.Now()
			mu.Lock()
			for i := id; i < id+batch; i++ {
				committed[i] = now
			}
			mu.Unlock()
		}
		writerDone <- nil
	}()

	low, count := 1, 0 // every id below low is seen
	deadline := time.Now().Add(duration + 60*time.Second)
	for count < total && time.Now().Before(deadline) {
		time.Sleep(25 * time.Millisecond)
		full, err := e.fullBatches(low, batch, 1)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		for _, first := range full {
			for id := first; id < first+batch && id <= total; id++ {
				if id >= 1 && seen[id].IsZero() {
					seen[id] = now
					count++
				}
			}
		}
		for low <= total && !seen[low].IsZero() {
			low++
		}
	}
	b.StopTimer()
	if err := <-writerDone; err != nil {
		b.Fatal(err)
	}
	if count != total {
		b.Fatalf("%d of %d rows became visible (status %v)", count, total, r.Status())
	}
	lags := make([]time.Duration, 0, total)
	mu.Lock()
	for id := 1; id <= total; id++ {
		lags = append(lags, max(seen[id].Sub(committed[id]), 0))
	}
	mu.Unlock()
	slices.Sort(lags)
	q := func(p float64) time.Duration { return lags[int(p*float64(len(lags)-1))] }
	b.ReportMetric(float64(q(0.5).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(q(0.99).Milliseconds()), "p99-ms")
	b.ReportMetric(float64(lags[len(lags)-1].Milliseconds()), "max-ms")
	b.Logf("%d rows at %d rows/s: commit → search-visible lag p50 %v, p99 %v, max %v", total, rate, q(0.5), q(0.99), lags[len(lags)-1])
}

// fullBatches returns the first ids of the committed batches (ids
// first..first+batch-1, first = offset + k*batch) at or above from whose every
// row a search sees now (no refresh): one size-0 search with a histogram
// of ids.
func (e *env) fullBatches(from, batch, offset int) ([]int, error) {
	q := fmt.Sprintf(`{"size":0,"track_total_hits":false,"query":{"range":{"id":{"gte":%d}}},
		"aggs":{"b":{"histogram":{"field":"id","interval":%d,"offset":%d,"min_doc_count":%d}}}}`, from, batch, offset, batch)
	resp, err := http.Post(e.esURL+"/"+e.index+"-customers/_search", "application/json", strings.NewReader(q))
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("search: %s: %s", resp.Status, body)
	}
	var res struct {
		Aggregations struct {
			B struct {
				Buckets []struct {
					Key      float64
					DocCount int `json:"doc_count"`
				}
			}
		}
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&res); err != nil {
		return nil, err
	}
	var out []int
	for _, bk := range res.Aggregations.B.Buckets {
		if bk.DocCount == batch {
			out = append(out, int(bk.Key))
		}
	}
	return out, nil
}

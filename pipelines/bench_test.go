package pipelines_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"weir/broker/brokertest/testbroker"
	"weir/internal/kafkaclient"
	"weir/pipelines"
)

const benchLines = 200_000

const benchPlain = `
source "file" "%[1]s" {
  topic         = "%[1]s"
  include       = ["${path.root}/in.log"]
  encoding      = "json"
  poll_interval = "10ms"
}
`

const benchTransforms = `
source "file" "%[1]s" {
  topic         = "%[1]s"
  include       = ["${path.root}/in.log"]
  encoding      = "json"
  poll_interval = "10ms"

  parse_json {
    field        = "message"
    remove_field = true
  }
  set {
    service = "checkout"
    level   = upper(record.level)
  }
  filter {
    condition = record.level != "TRACE"
  }
}
`

// BenchmarkPipeline measures a file → topic pipeline end to end (lines
// of JSON tailed, produced and acknowledged by a real broker), without
// transforms and with parse JSON → set 2 fields → filter. One op is
// 200,000 lines; run with -benchtime=1x -count=5 and compare the
// medians of records/s.
func BenchmarkPipeline(b *testing.B) {
	br := testbroker.Start(b)
	for _, bc := range []struct{ name, hcl string }{{"plain", benchPlain}, {"transforms", benchTransforms}} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			f, err := os.Create(filepath.Join(dir, "in.log"))
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriter(f)
			levels := []string{"info", "warn", "error", "debug"}
			for i := 0; i < benchLines; i++ {
				fmt.Fprintf(w, `{"time":"2024-05-01T10:00:00.%03dZ","level":%q,"msg":"request served in %dms","user":"u%d","n":%d}`+"\n", i%1000, levels[i%4], i%700, i%97, i)
			}
			w.Flush()
			f.Close()
			var total time.Duration
			for i := 0; i < b.N; i++ {
				name := fmt.Sprintf("bench_%s_%d_%d", bc.name, i, time.Now().UnixNano())
				src := []pipelines.SourceFile{{Name: filepath.Join(dir, "p.hcl"), Src: []byte(fmt.Sprintf(bc.hcl, name))}}
				cfg, diags := pipelines.LoadSources(src, dir, pipelines.Options{Brokers: []string{br.Addr}})
				if diags.HasErrors() {
					b.Fatal(diags)
				}
				r, err := pipelines.NewRunner(pipelines.RunOptions{Client: kafkaclient.Options{Brokers: []string{br.Addr}}, Logger: zap.NewNop()})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if _, err := r.Apply(context.Background(), cfg); err != nil {
					b.Fatal(err)
				}
				for {
					st := r.Status()
					if len(st) == 1 && st[0].RecordsOut >= benchLines {
						break
					}
					if time.Since(start) > 5*time.Minute {
						b.Fatalf("timed out: %+v", st)
					}
					time.Sleep(5 * time.Millisecond)
				}
				total += time.Since(start)
				r.Stop()
			}
			b.ReportMetric(float64(benchLines)*float64(b.N)/total.Seconds(), "records/s")
		})
	}
}

package registry

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
)

// BenchmarkGetSchemaByID: GET /schemas/ids/{id} over loopback HTTP with a
// keep-alive client, from parallel goroutines, against a registry on a
// real weir broker.
func BenchmarkGetSchemaByID(b *testing.B) {
	br := startBroker(b)
	tr := startRegistry(b, br)
	ctx := context.Background()
	const ids = 16
	for i := 0; i < ids; i++ {
		s := fmt.Sprintf(`{"type":"record","name":"R%d","fields":[{"name":"f","type":"string"},{"name":"g","type":"long"}]}`, i)
		if _, err := tr.cl.CreateSchema(ctx, fmt.Sprintf("s%d-value", i), avro(s)); err != nil {
			b.Fatal(err)
		}
	}
	tp := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}
	defer tp.CloseIdleConnections()
	hc := &http.Client{Transport: tp}
	var n atomic.Int64
	b.SetParallelism(8) // 8 clients per core
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 4096)
		for pb.Next() {
			id := n.Add(1)%ids + 1
			resp, err := hc.Get(fmt.Sprintf("%s/schemas/ids/%d", tr.srv.URL, id))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.CopyBuffer(io.Discard, resp.Body, buf); err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}

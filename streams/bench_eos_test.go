package streams

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"weir/internal/kafkaclient"
	"weir/internal/testkit"
)

// BenchmarkGuarantee runs the stateless and count topologies of
// StatelessMapFilter and CountByKey at-least-once (alos) and exactly-once
// (eos) in the same invocation, both committing every 100 ms (Kafka
// Streams' commit.interval.ms under exactly_once_v2), so each run holds
// several commits: from the app's start until every input record is
// processed, then the app is stopped (its final commit, a transaction
// commit under eos) and the run ends when the group has committed every
// input offset.
//
//	go test ./streams -run '^$' -bench Guarantee -benchtime 1x -count 5 -timeout 60m
func BenchmarkGuarantee(b *testing.B) {
	for _, topo := range []string{"stateless", "count"} {
		for _, eos := range []bool{false, true} {
			name := topo + "/alos"
			if eos {
				name = topo + "/eos"
			}
			b.Run(name, func(b *testing.B) {
				for range b.N {
					guaranteeRun(b, topo, eos)
				}
			})
		}
	}
}

func guaranteeRun(b *testing.B, topo string, eos bool) {
	br := startBenchBroker(b)
	bld := NewBuilder()
	switch topo {
	case "stateless":
		prefill(b, br, "in", benchRecords, 0)
		br.CreateTopic("out", benchPartitions, nil)
		s := From(bld, "in", Bytes(), Bytes()).Filter(func(k, _ []byte) bool { return binary.BigEndian.Uint64(k)%10 != 3 })
		MapValues(s, func(_, v []byte) []byte { return bytes.ToUpper(v) }).To("out", Bytes(), Bytes())
	default:
		prefill(b, br, "in", benchRecords, 100_000)
		br.CreateTopic("counts", benchPartitions, nil)
		Count(GroupByKey(From(bld, "in", String(), Bytes()), String(), Bytes()), "n").ToStream().To("counts", String(), Int64())
	}
	tp := mustBuildB(b, bld)
	adm := kadm.NewClient(br.Client())
	start := time.Now()
	a, err := New(tp, Config{ApplicationID: "g", Client: kafkaclient.Options{Brokers: []string{br.Addr}}, StateDir: b.TempDir(),
		CommitInterval: 100 * time.Millisecond, ExactlyOnce: eos})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	testkit.CheckFor(b, 5*time.Minute, func() error {
		if n := processed(a); n < benchRecords {
			return fmt.Errorf("%d records processed, want %d", n, benchRecords)
		}
		return nil
	})
	cancel()
	testkit.CheckFor(b, 5*time.Minute, func() error { return groupCaughtUp(context.Background(), adm, "g", "in") })
	report(b, benchRecords, time.Since(start))
	if err := <-errc; err != nil {
		b.Error(err)
	}
	if eos {
		b.ReportMetric(float64(a.txns.Load()), "txns")
	}
}

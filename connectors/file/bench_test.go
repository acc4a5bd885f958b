package file

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"weir/broker/brokertest/testbroker"
)

// BenchmarkTailToTopic: a file of 200-byte lines tailed into a topic as
// Avro through the runtime and an in-process weir broker (acks=all), timed
// until the broker holds every record; reported in MiB/s of lines. The
// baseline sub-benchmark reads the same file with bufio.Scanner.
//
//	go test ./connectors/file -run '^$' -bench TailToTopic -benchtime 1x -count 5
func BenchmarkTailToTopic(b *testing.B) {
	const lines = 500_000 // ~100 MiB
	dir := b.TempDir()
	path := dir + "/bench.log"
	line := append(bytes.Repeat([]byte("x"), 199), '\n')
	var buf []byte
	for i := 0; i < lines; i++ {
		buf = append(buf, line...)
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		b.Fatal(err)
	}
	size := int64(len(buf))
	b.Run("bufio", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			f, _ := os.Open(path)
			sc := bufio.NewScanner(f)
			n := 0
			for sc.Scan() {
				n++
			}
			f.Close()
			if n != lines {
				b.Fatal(n)
			}
		}
	})
	b.Run("avro", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			tb := testbroker.Start(b)
			reg := tb.Registry(b)
			tb.CreateTopic("bench", 1, nil)
			o := Options{Topic: "bench", Include: []string{path}, Host: "h", RescanInterval: time.Hour}
			cl := newSRClient(b, reg)
			o.Encoder = &AvroEncoder{Registry: cl}
			adm := kadm.NewClient(tb.Client())
			b.StartTimer()
			stop := runBench(b, tb.Addr, o)
			for {
				ends, _ := adm.ListEndOffsets(context.Background(), "bench")
				if o, _ := ends.Lookup("bench", 0); o.Offset >= lines {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			b.StopTimer()
			stop()
			tb.Stop()
		}
	})
}

package topicconfig

import (
	"testing"
	"time"
)

// The log cleaner's settings: Kafka's defaults, static values, and dynamic
// per-broker / cluster-default values as they change; the topic defaults
// of the cleaner (min.cleanable.dirty.ratio, ...) follow log.cleaner.*.
func TestCleanerSettings(t *testing.T) {
	b, err := NewBroker(map[string]string{"log.cleaner.backoff.ms": "500", "log.cleaner.threads": "2"})
	if err != nil {
		t.Fatal(err)
	}
	want := CleanerSettings{Backoff: 500 * time.Millisecond, DedupeBufferSize: 134217728, Threads: 2,
		IOBufferLoadFactor: 0.9, IOMaxBytesPerSecond: 1.7976931348623157e308}
	if got := b.Cleaner(); got != want {
		t.Fatalf("static: %+v, want %+v", got, want)
	}
	if r, _ := b.Resolve(nil); r.MinCleanableRatio != 0.5 || r.MaxCompactionLagMs != 1<<63-1 {
		t.Fatalf("default ratio %v max lag %d", r.MinCleanableRatio, r.MaxCompactionLagMs)
	}
	b.SetDynamic(map[string]string{"log.cleaner.backoff.ms": "100"},
		map[string]string{"log.cleaner.backoff.ms": "200", "log.cleaner.io.max.bytes.per.second": "1048576",
			"log.cleaner.dedupe.buffer.size": "1000000", "log.cleaner.min.cleanable.ratio": "0.1"})
	want.Backoff, want.IOMaxBytesPerSecond, want.DedupeBufferSize = 100*time.Millisecond, 1048576, 1000000
	if got := b.Cleaner(); got != want {
		t.Fatalf("dynamic: %+v, want %+v", got, want)
	}
	if r, _ := b.Resolve(nil); r.MinCleanableRatio != 0.1 {
		t.Fatalf("ratio from the dynamic default: %v", r.MinCleanableRatio)
	}
	if r, _ := b.Resolve(map[string]string{MinCleanableDirtyRatio: "0.7"}); r.MinCleanableRatio != 0.7 {
		t.Fatalf("topic override ratio: %v", r.MinCleanableRatio)
	}
	b.SetDynamic(nil, map[string]string{"log.cleaner.backoff.ms": "200"})
	if got := b.Cleaner().Backoff; got != 200*time.Millisecond {
		t.Fatalf("cluster default backoff %v", got)
	}
}

package quota

import (
	"testing"
	"time"
)

// BenchmarkRecord: one Record of a client under a quota it does not
// reach, among quotas at several levels (the cost per Produce request).
func BenchmarkRecord(b *testing.B) {
	m := NewManager(ProducerByteRate, DefaultWindow, 0)
	m.SetLimits(map[Entity]float64{
		{User: defaultName}:                          1e12,
		{ClientID: named("c")}:                       1e12,
		{User: named("other"), ClientID: named("x")}: 1,
	})
	now := time.Now()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if m.Record("ANONYMOUS", "c", 16384, now.Add(time.Duration(i)*time.Microsecond)) != 0 {
			b.Fatal("throttled")
		}
	}
}

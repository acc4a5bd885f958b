package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func TestBucketBoundaries(t *testing.T) {
	check := func(v int64) {
		i := bucketOf(v)
		if i < 0 || i >= numBuckets {
			t.Fatalf("bucketOf(%d) = %d out of [0,%d)", v, i, numBuckets)
		}
		if hi := bucketHigh(i); hi < v {
			t.Fatalf("bucketHigh(bucketOf(%d)) = %d < value", v, hi)
		}
		if i > 0 && bucketHigh(i-1) >= v {
			t.Fatalf("value %d also fits bucket %d (high %d)", v, i-1, bucketHigh(i-1))
		}
		// Relative width of the bucket stays under 1/128.
		if v >= linearMax {
			lo := bucketHigh(i-1) + 1
			if w := float64(bucketHigh(i)-lo) / float64(lo); w > 1.0/128 {
				t.Fatalf("bucket %d [%d,%d] relative width %.4f", i, lo, bucketHigh(i), w)
			}
		}
	}
	for v := int64(0); v < 70000; v++ {
		check(v)
	}
	for s := 16; s < 63; s++ {
		p := int64(1) << s
		check(p - 1)
		check(p)
		check(p + 1)
	}
	check(math.MaxInt64)
	if bucketOf(math.MaxInt64) != numBuckets-1 {
		t.Fatalf("MaxInt64 in bucket %d, want the last (%d)", bucketOf(math.MaxInt64), numBuckets-1)
	}
}

func TestQuantilesAgainstExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	vals := make([]int64, 200000)
	for i := range vals {
		// Log-normal-ish latencies from 1µs to ~1s.
		v := int64(math.Exp(rng.NormFloat64()*1.5+12)) + 1000
		vals[i] = v
		h.Record(v)
	}
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		rank := int(math.Ceil(q*float64(len(vals)))) - 1
		exact := vals[rank]
		got := h.Quantile(q)
		if got < exact || float64(got-exact) > float64(exact)/128+1 {
			t.Errorf("q%.3f = %d, exact %d (must be >= and within 1/128)", q, got, exact)
		}
	}
	if h.Max() != vals[len(vals)-1] || h.Min() != vals[0] {
		t.Errorf("max/min = %d/%d, want %d/%d", h.Max(), h.Min(), vals[len(vals)-1], vals[0])
	}
	var sum float64
	for _, v := range vals {
		sum += float64(v)
	}
	if m := h.Mean(); math.Abs(m-sum/float64(len(vals))) > 1e-6*m {
		t.Errorf("mean %f, want %f", m, sum/float64(len(vals)))
	}
	if h.Count() != uint64(len(vals)) {
		t.Errorf("count %d", h.Count())
	}
}

func TestEmptyAndSmall(t *testing.T) {
	var h Histogram
	if h.Quantile(0.99) != 0 || h.Max() != 0 || h.Min() != 0 || h.Mean() != 0 {
		t.Fatal("empty histogram must report zeros")
	}
	h.Record(-5) // counts as 0
	h.Record(7)
	h.Record(200)
	if h.Min() != 0 || h.Max() != 200 || h.Quantile(0.5) != 7 || h.Quantile(1) != 200 {
		t.Fatalf("min %d max %d p50 %d p100 %d", h.Min(), h.Max(), h.Quantile(0.5), h.Quantile(1))
	}
}

func TestConcurrentRecordAndMerge(t *testing.T) {
	var a, b Histogram
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= 10000; i++ {
				a.Record(int64(i))
			}
		}()
	}
	wg.Wait()
	if a.Count() != 80000 || a.Max() != 10000 || a.Min() != 1 {
		t.Fatalf("count %d max %d min %d", a.Count(), a.Max(), a.Min())
	}
	b.Record(1 << 40)
	b.Merge(&a)
	if b.Count() != 80001 || b.Max() != 1<<40 || b.Min() != 1 {
		t.Fatalf("merged count %d max %d min %d", b.Count(), b.Max(), b.Min())
	}
	if p := b.Quantile(0.5); p < 5000 || p > 5000+5000/128+1 {
		t.Fatalf("merged p50 = %d, want ~5000", p)
	}
}

func BenchmarkRecord(b *testing.B) {
	var h Histogram
	v := int64(123456)
	for b.Loop() {
		h.Record(v)
		v += 7
	}
}

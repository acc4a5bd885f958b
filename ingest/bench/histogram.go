package bench

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Histogram counts non-negative int64 values (latencies in nanoseconds) in
// log-linear buckets, HDR style: values below 256 are exact, larger ones
// fall in one of 128 equal sub-buckets of their power of two, so a reported
// quantile is within 1/128 (< 0.8%) of the true value. It takes ~58 KiB,
// needs no allocation per value and is safe for concurrent use: Record is
// a handful of atomic adds, cheap next to a produce round trip.
//
// Written here rather than imported: the well-known Go HDR module
// (HdrHistogram/hdrhistogram-go) is not safe for concurrent Record, which
// kgo's promise callbacks need, and this is ~100 lines.
type Histogram struct {
	counts [numBuckets]atomic.Uint64
	n      atomic.Uint64
	sum    atomic.Uint64
	max    atomic.Int64
	min    atomic.Int64 // stored as value+1 so the zero value means "none"
}

const (
	subBits    = 7                                   // 128 sub-buckets per power of two
	subCount   = 1 << subBits                        // 128
	linearMax  = 2 * subCount                        // values < 256 have a bucket each
	numBuckets = linearMax + (63-subBits-1)*subCount // bits.Len64 of an int64 is at most 63
)

// bucketOf returns v's bucket index; v must be >= 0.
func bucketOf(v int64) int {
	u := uint64(v)
	if u < linearMax {
		return int(u)
	}
	e := bits.Len64(u) - (subBits + 1) // >= 1
	top := u >> uint(e)                // in [128, 256)
	return linearMax + (e-1)*subCount + int(top-subCount)
}

// bucketHigh returns the largest value that falls in bucket i.
func bucketHigh(i int) int64 {
	if i < linearMax {
		return int64(i)
	}
	i -= linearMax
	e := i/subCount + 1
	top := uint64(i%subCount + subCount)
	hi := (top+1)<<uint(e) - 1
	if hi > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(hi)
}

// Record adds one value; negative values count as 0.
func (h *Histogram) Record(v int64) {
	if v < 0 {
		v = 0
	}
	h.counts[bucketOf(v)].Add(1)
	h.n.Add(1)
	h.sum.Add(uint64(v))
	for {
		m := h.max.Load()
		if v <= m || h.max.CompareAndSwap(m, v) {
			break
		}
	}
	for {
		m := h.min.Load()
		if (m != 0 && v+1 >= m) || h.min.CompareAndSwap(m, v+1) {
			break
		}
	}
}

// RecordDuration adds d in nanoseconds.
func (h *Histogram) RecordDuration(d time.Duration) { h.Record(int64(d)) }

// Count returns how many values were recorded.
func (h *Histogram) Count() uint64 { return h.n.Load() }

// Max returns the largest value recorded (exact), 0 if none.
func (h *Histogram) Max() int64 { return h.max.Load() }

// Min returns the smallest value recorded (exact), 0 if none.
func (h *Histogram) Min() int64 {
	if m := h.min.Load(); m > 0 {
		return m - 1
	}
	return 0
}

// Mean returns the exact mean of the recorded values, 0 if none.
func (h *Histogram) Mean() float64 {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	return float64(h.sum.Load()) / float64(n)
}

// Quantile returns the value at quantile q in [0, 1]: the upper bound of
// the bucket holding the ceil(q*n)-th smallest value, capped at Max. It
// returns 0 when nothing was recorded. Concurrent Records may or may not
// be reflected.
func (h *Histogram) Quantile(q float64) int64 {
	n := h.n.Load()
	if n == 0 {
		return 0
	}
	if q <= 0 {
		return h.Min()
	}
	rank := uint64(math.Ceil(q * float64(n)))
	if rank < 1 {
		rank = 1
	}
	if rank > n {
		rank = n
	}
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			if hi := bucketHigh(i); hi < h.Max() {
				return hi
			}
			return h.Max()
		}
	}
	return h.Max()
}

// Merge adds every value counted in o to h.
func (h *Histogram) Merge(o *Histogram) {
	for i := range o.counts {
		if c := o.counts[i].Load(); c > 0 {
			h.counts[i].Add(c)
		}
	}
	h.n.Add(o.n.Load())
	h.sum.Add(o.sum.Load())
	if o.n.Load() > 0 {
		om, omin := o.Max(), o.Min()
		for {
			m := h.max.Load()
			if om <= m || h.max.CompareAndSwap(m, om) {
				break
			}
		}
		for {
			m := h.min.Load()
			if (m != 0 && omin+1 >= m) || h.min.CompareAndSwap(m, omin+1) {
				break
			}
		}
	}
}

package quota

import "math"

// Window is how rates are measured (Kafka's quota.window.num and
// quota.window.size.seconds): Samples windows of Size milliseconds each.
type Window struct {
	Samples int   // quota.window.num (default 11)
	SizeMs  int64 // quota.window.size.seconds × 1000 (default 1000)
}

// DefaultWindow is Kafka's default: 11 samples of 1 second.
var DefaultWindow = Window{Samples: 11, SizeMs: 1000}

// sample is one window of a Rate: the values recorded since start.
type sample struct {
	start int64 // ms
	value float64
}

// Rate is Kafka's Rate over a SampledStat: values are summed into windows
// of w.SizeMs, the oldest of w.Samples windows is reused when a new one
// starts, and the rate is the sum of the live windows divided by the time
// they span (at least Samples-1 full windows, so a burst right after a
// quiet period is measured against the whole window, not a few
// milliseconds). Not safe for concurrent use.
type Rate struct {
	samples []sample
	current int
}

// Record adds v at now (ms).
func (r *Rate) Record(w Window, v float64, now int64) {
	s := r.currentSample(w, now)
	s.value += v
}

func (r *Rate) currentSample(w Window, now int64) *sample {
	if len(r.samples) == 0 {
		r.samples = append(make([]sample, 0, w.Samples), sample{start: now})
		r.current = 0
	}
	s := &r.samples[r.current]
	if now-s.start >= w.SizeMs {
		// Kafka's SampledStat.advance: the next slot, fresh.
		r.current = (r.current + 1) % w.Samples
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, sample{start: now})
		} else {
			r.samples[r.current] = sample{start: now}
		}
		s = &r.samples[r.current]
	}
	return s
}

// purge resets the windows that ended more than Samples windows ago.
func (r *Rate) purge(w Window, now int64) {
	expire := int64(w.Samples) * w.SizeMs
	for i := range r.samples {
		if now-r.samples[i].start >= expire {
			r.samples[i] = sample{start: now}
		}
	}
}

// windowMs is the time the rate is measured over (Kafka's Rate.windowSize):
// from the oldest live window to now, but at least Samples-1 full windows,
// and at least 1 ms.
func (r *Rate) windowMs(w Window, now int64) int64 {
	r.purge(w, now)
	oldest := now
	for _, s := range r.samples {
		if s.start < oldest {
			oldest = s.start
		}
	}
	elapsed := now - oldest
	if full, min := elapsed/w.SizeMs, int64(w.Samples-1); full < min {
		elapsed += (min - full) * w.SizeMs
	}
	return max(elapsed, 1)
}

// Measure returns the rate per second at now.
func (r *Rate) Measure(w Window, now int64) float64 {
	win := r.windowMs(w, now)
	var sum float64
	for _, s := range r.samples {
		sum += s.value
	}
	return sum / (float64(win) / 1000)
}

// ThrottleMs is Kafka's QuotaUtils.throttleTime: how long to wait, with
// nothing more recorded, for rate (measured at now) to come back down to
// limit; 0 when it is within the limit.
func (r *Rate) ThrottleMs(w Window, limit float64, now int64) int64 {
	rate := r.Measure(w, now)
	if rate <= limit {
		return 0
	}
	win := r.windowMs(w, now)
	return int64(math.Round((rate - limit) / limit * float64(win)))
}

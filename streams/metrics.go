package streams

import "github.com/prometheus/client_golang/prometheus"

// Telemetry of a streams instance, per task (labels app, task):
//
//	weir_streams_records_processed_total   input records processed
//	weir_streams_lag_records               high watermark - next offset
//	weir_streams_store_bytes               stores' size (disk + memtables + cache)
//	weir_streams_restore_total_records     changelog records to read at the last restore
//	weir_streams_restored_records          changelog records read so far
//	weir_streams_late_dropped_total        (record, window) pairs past the grace period
//	weir_streams_dead_letters_total        records sent to the dead-letter topic
//	weir_streams_replay_skipped_total      replayed records the restored state already had
//	weir_streams_duplicates_skipped_total  repartition copies of records already applied
//
// Values come from the live tasks at scrape time: a task's counters start
// again from zero when it moves to another instance.
type metrics struct {
	a                                                              *App
	processed, lag, size, rtotal, restored, late, dead, skip, dups *prometheus.Desc
}

func newMetrics(a *App) *metrics {
	l := []string{"app", "task"}
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("weir_streams_"+name, help, l, nil)
	}
	return &metrics{a: a,
		processed: d("records_processed_total", "Input records processed by the task."),
		lag:       d("lag_records", "Records between the task's position and the partition's high watermark."),
		size:      d("store_bytes", "Size of the task's stores (disk, memtables and write cache)."),
		rtotal:    d("restore_total_records", "Changelog records to read at the task's last restore."),
		restored:  d("restored_records", "Changelog records read by the task's restore so far."),
		late:      d("late_dropped_total", "Records dropped from windows already closed (past the grace period)."),
		dead:      d("dead_letters_total", "Input records sent to the dead-letter topic."),
		skip:      d("replay_skipped_total", "Replayed input records already reflected in the restored state."),
		dups:      d("duplicates_skipped_total", "Repartition records skipped as copies of records already applied (written again by an upstream replay)."),
	}
}

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.processed, m.lag, m.size, m.rtotal, m.restored, m.late, m.dead, m.skip, m.dups} {
		ch <- d
	}
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	app := m.a.cfg.ApplicationID
	for _, s := range m.a.Metrics() {
		c := func(d *prometheus.Desc, t prometheus.ValueType, v int64) {
			ch <- prometheus.MustNewConstMetric(d, t, float64(v), app, s.Task)
		}
		c(m.processed, prometheus.CounterValue, s.Processed)
		c(m.lag, prometheus.GaugeValue, s.Lag)
		c(m.size, prometheus.GaugeValue, s.StoreBytes)
		c(m.rtotal, prometheus.GaugeValue, s.RestoreTotal)
		c(m.restored, prometheus.GaugeValue, s.Restored)
		c(m.late, prometheus.CounterValue, s.LateDropped)
		c(m.dead, prometheus.CounterValue, s.DeadLetters)
		c(m.skip, prometheus.CounterValue, s.SkippedReplayed)
		c(m.dups, prometheus.CounterValue, s.SkippedDuplicates)
	}
}

package pipelines

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/internal/kafkaclient"
	"weir/pipelines/workgroup"
)

// StatusInterval is how often a worker reports to the status topic.
const StatusInterval = 2 * time.Second

// statusWriter reports a worker's components to workgroup.StatusTopic.
type statusWriter struct {
	cl      *kgo.Client
	written map[string]bool // component keys last written
	prev    map[string]Status
	prevAt  time.Time
	started time.Time // this run's first report
	// cleaned is set once the records a previous run left were read
	// (and so are deleted by the next report).
	cleaned bool
}

// startStatus starts the status reporter of a worker.
func (r *Runner) startStatus() {
	w := r.wg
	ctx, cancel := context.WithCancel(context.Background())
	w.statCancel, w.statDone = cancel, make(chan struct{})
	go func() {
		defer close(w.statDone)
		if err := r.createStatusTopic(ctx); err != nil {
			r.log.Warn("worker status: the status topic cannot be created; not reporting", zap.String("topic", workgroup.StatusTopic), zap.Error(err))
			return
		}
		cl, err := kafkaclient.New(r.opts.Client, kafkaclient.Producer(kafkaclient.AcksAll, kgo.NoCompression())...)
		if err != nil {
			r.log.Warn("worker status: client", zap.Error(err))
			return
		}
		w.stat = &statusWriter{cl: cl, written: map[string]bool{}, started: time.Now()}
		tk := time.NewTicker(StatusInterval)
		defer tk.Stop()
		for {
			r.readPrevStatus(ctx)
			r.reportStatus(ctx, false)
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
		}
	}()
}

// readPrevStatus notes the component records a previous run of this
// worker left (a kill -9), so that the next report deletes those no
// longer true. Until the topic could be read it tries again before each
// report (brokers restarting with the worker); readers meanwhile leave
// out records older than this run (WorkerStatus.Started).
func (r *Runner) readPrevStatus(ctx context.Context) {
	w := r.wg
	if w.stat.cleaned {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	prev, err := workgroup.ReadStatus(rctx, r.opts.Client, w.opts.Group)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Debug("worker status: reading the previous run's records", zap.Error(err))
		}
		return
	}
	for _, c := range prev.Components {
		if c.Worker == w.opts.ID {
			w.stat.written[workgroup.ComponentKey(w.opts.Group, c.Component, c.Worker)] = true
		}
	}
	w.stat.cleaned = true
}

func (r *Runner) createStatusTopic(ctx context.Context) error {
	compact := "compact"
	for {
		resp, err := r.adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &compact}, workgroup.StatusTopic)
		if err == nil {
			err = resp.Err
		}
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			return nil
		}
		// INVALID_REPLICATION_FACTOR: a cluster starting, not every
		// broker registered yet (a worker started with its brokers gave
		// up reporting for good).
		if (!kafkaclient.Retriable(err) && !errors.Is(err, kerr.InvalidReplicationFactor)) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// reportStatus writes the worker's and its components' records; final
// marks the worker stopped and deletes its component records.
func (r *Runner) reportStatus(ctx context.Context, final bool) {
	w := r.wg
	sw := w.stat
	if sw == nil {
		return
	}
	now := time.Now()
	group, worker := w.opts.Group, w.opts.ID
	r.mu.Lock()
	hash := w.pipelines
	placement := w.placement
	r.mu.Unlock()
	ws := workgroup.WorkerStatus{Group: group, Worker: worker, State: "running", Pipelines: hash, Started: sw.started, At: now}
	if a := w.g.Assignment(); a != nil {
		ws.Leader = a.Leader
	}
	if final {
		ws.State = "stopped"
	}
	b, _ := json.Marshal(ws)
	recs := []*kgo.Record{{Topic: workgroup.StatusTopic, Key: []byte(workgroup.WorkerKey(group, worker)), Value: b}}
	cur := map[string]Status{}
	keys := map[string]bool{}
	if !final {
		secs := now.Sub(sw.prevAt).Seconds()
		for _, st := range r.Status() {
			cur[st.ID] = st
			cs := workgroup.ComponentStatus{Group: group, Component: st.ID, Kind: st.Kind, Worker: worker,
				Placement: placement[st.ID], State: st.State, Lag: st.Lag, Errors: st.Errors, At: now}
			if p, ok := sw.prev[st.ID]; ok && secs > 0 {
				cs.InRate = max(0, (st.RecordsIn-p.RecordsIn)/secs)
				cs.OutRate = max(0, (st.RecordsOut-p.RecordsOut)/secs)
			}
			if st.LastErr != nil {
				cs.LastError = st.LastErr.Error()
			}
			k := workgroup.ComponentKey(group, st.ID, worker)
			keys[k] = true
			b, _ := json.Marshal(cs)
			recs = append(recs, &kgo.Record{Topic: workgroup.StatusTopic, Key: []byte(k), Value: b})
		}
	}
	for k := range sw.written {
		if !keys[k] {
			recs = append(recs, &kgo.Record{Topic: workgroup.StatusTopic, Key: []byte(k)}) // tombstone
		}
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := sw.cl.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		if ctx.Err() == nil {
			r.log.Warn("worker status: writing the status topic", zap.Error(err))
		}
		return
	}
	sw.written, sw.prev, sw.prevAt = keys, cur, now
}

// stopStatus stops the reporter and writes the final report.
func (r *Runner) stopStatus() {
	w := r.wg
	if w.statCancel == nil {
		return
	}
	w.statCancel()
	<-w.statDone
	if w.stat != nil {
		r.reportStatus(context.Background(), true)
		w.stat.cl.Close()
	}
}

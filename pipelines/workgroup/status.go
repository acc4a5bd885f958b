package workgroup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/kafkaclient"
)

// StatusTopic is the compacted topic where the workers of every group
// report what they run, as Kafka Connect's status.storage.topic: keys
//
//	<group>/worker/<worker>                  a WorkerStatus
//	<group>/component/<component>/<worker>   a ComponentStatus
//
// A worker rewrites its records every few seconds (At says when) and
// deletes (tombstones) those of components it no longer runs; a clean
// stop marks the worker "stopped". A worker killed leaves its last
// records, which age: readers show how long ago they were written. When
// it starts again, its component records written before its new run
// started are not shown (its first reports also delete them, when it
// can read the topic).
const StatusTopic = "weir-worker-status"

// WorkerStatus is one worker's report.
type WorkerStatus struct {
	Group  string `json:"group"`
	Worker string `json:"worker"`
	// State is "running" or "stopped" (a clean stop).
	State string `json:"state"`
	// Pipelines is the hash of the pipeline files it loaded.
	Pipelines string `json:"pipelines"`
	// Leader and Generation of its last assignment.
	Leader     string `json:"leader,omitempty"`
	Generation int32  `json:"generation,omitempty"`
	// Started is when this run of the worker started reporting: its
	// component records from before then are a killed run's.
	Started time.Time `json:"started,omitzero"`
	At      time.Time `json:"at"`
}

// ComponentStatus is one component on one worker.
type ComponentStatus struct {
	Group     string `json:"group"`
	Component string `json:"component"`
	Kind      string `json:"kind,omitempty"`
	Worker    string `json:"worker"`
	// Placement is "singleton", "per-worker" or "partitions" (sinks and
	// streams, sharing their topics' partitions).
	Placement string `json:"placement"`
	// State is the runner's: starting, running, failed, stopped.
	State string `json:"state"`
	// InRate and OutRate are records/s over the last report interval;
	// Lag is records behind (sinks, streams) or in flight (sources).
	InRate    float64   `json:"in_rate"`
	OutRate   float64   `json:"out_rate"`
	Lag       float64   `json:"lag"`
	Errors    float64   `json:"errors"`
	LastError string    `json:"last_error,omitempty"`
	At        time.Time `json:"at"`
}

// WorkerKey and ComponentKey are the status records' keys.
func WorkerKey(group, worker string) string { return group + "/worker/" + worker }

// ComponentKey is the key of component's status on worker.
func ComponentKey(group, component, worker string) string {
	return group + "/component/" + component + "/" + worker
}

// Status is a group's view read back from the status topic.
type Status struct {
	Workers    []WorkerStatus
	Components []ComponentStatus
}

// AddRecord applies one status record (a nil value deletes its key) to
// the view being read; records of other groups are skipped.
func (s *StatusReader) AddRecord(key, value []byte) error {
	k := string(key)
	if !strings.HasPrefix(k, s.group+"/") {
		return nil
	}
	if value == nil {
		delete(s.workers, k)
		delete(s.comps, k)
		return nil
	}
	rest := k[len(s.group)+1:]
	switch {
	case strings.HasPrefix(rest, "worker/"):
		w, err := DecodeWorkerStatus(value)
		if err != nil {
			return fmt.Errorf("status record %q: %w", k, err)
		}
		s.workers[k] = *w
	case strings.HasPrefix(rest, "component/"):
		c, err := DecodeComponentStatus(value)
		if err != nil {
			return fmt.Errorf("status record %q: %w", k, err)
		}
		s.comps[k] = *c
	default:
		return fmt.Errorf("status record %q: unknown key", k)
	}
	return nil
}

// StatusReader accumulates the status records of one group.
type StatusReader struct {
	group   string
	workers map[string]WorkerStatus
	comps   map[string]ComponentStatus
}

// NewStatusReader returns an accumulator of group's status records.
func NewStatusReader(group string) *StatusReader {
	return &StatusReader{group: group, workers: map[string]WorkerStatus{}, comps: map[string]ComponentStatus{}}
}

// Status returns the view, workers by id, components by id then worker.
// A component reported before its worker's current run started is left
// out: a run killed before it could delete it.
func (s *StatusReader) Status() Status {
	var st Status
	started := map[string]time.Time{}
	for _, w := range s.workers {
		st.Workers = append(st.Workers, w)
		started[w.Worker] = w.Started
	}
	for _, c := range s.comps {
		if c.At.Before(started[c.Worker]) {
			continue
		}
		st.Components = append(st.Components, c)
	}
	sort.Slice(st.Workers, func(i, j int) bool { return st.Workers[i].Worker < st.Workers[j].Worker })
	sort.Slice(st.Components, func(i, j int) bool {
		a, b := st.Components[i], st.Components[j]
		if a.Component != b.Component {
			return a.Component < b.Component
		}
		return a.Worker < b.Worker
	})
	return st
}

// PipelineGroups returns the running workers grouped by the hash of
// their pipeline files, largest group first: more than one group means
// workers loaded different files.
func (st Status) PipelineGroups() [][]WorkerStatus {
	by := map[string][]WorkerStatus{}
	for _, w := range st.Workers {
		if w.State == "running" {
			by[w.Pipelines] = append(by[w.Pipelines], w)
		}
	}
	out := make([][]WorkerStatus, 0, len(by))
	for _, ws := range by {
		out = append(out, ws)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i][0].Pipelines < out[j][0].Pipelines
	})
	return out
}

// DecodeWorkerStatus parses a worker's status record.
func DecodeWorkerStatus(b []byte) (*WorkerStatus, error) {
	if len(b) > maxEncoded {
		return nil, fmt.Errorf("worker status: %d bytes, more than %d", len(b), maxEncoded)
	}
	var w WorkerStatus
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, fmt.Errorf("worker status: %w", err)
	}
	if w.Worker == "" {
		return nil, errors.New("worker status: no worker id")
	}
	return &w, nil
}

// DecodeComponentStatus parses a component's status record.
func DecodeComponentStatus(b []byte) (*ComponentStatus, error) {
	if len(b) > maxEncoded {
		return nil, fmt.Errorf("component status: %d bytes, more than %d", len(b), maxEncoded)
	}
	var c ComponentStatus
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("component status: %w", err)
	}
	if c.Component == "" || c.Worker == "" {
		return nil, errors.New("component status: no component or worker")
	}
	return &c, nil
}

// ReadStatus reads group's view from the status topic: every record up
// to the partitions' ends at the time of the call.
func ReadStatus(ctx context.Context, co kafkaclient.Options, group string) (Status, error) {
	cl, err := kafkaclient.New(co)
	if err != nil {
		return Status{}, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, StatusTopic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return Status{}, fmt.Errorf("no status topic %s: no worker group has run on this cluster", StatusTopic)
		}
		return Status{}, fmt.Errorf("status topic %s: %w", StatusTopic, err)
	}
	want := map[int32]int64{}
	offs := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			offs[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	rd := NewStatusReader(group)
	if len(want) == 0 {
		return rd.Status(), nil
	}
	cons, err := kafkaclient.New(co, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{StatusTopic: offs}))
	if err != nil {
		return Status{}, err
	}
	defer cons.Close()
	for len(want) > 0 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			return Status{}, fmt.Errorf("reading %s: %w", StatusTopic, ctx.Err())
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil && !kafkaclient.Retriable(ferr) {
			return Status{}, fmt.Errorf("reading %s: %w", StatusTopic, ferr)
		}
		var derr error
		fs.EachRecord(func(r *kgo.Record) {
			if err := rd.AddRecord(r.Key, r.Value); err != nil && derr == nil {
				derr = err
			}
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
		if derr != nil {
			return Status{}, derr
		}
	}
	return rd.Status(), nil
}

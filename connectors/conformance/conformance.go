package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"weir/broker/brokertest/testbroker"
	"weir/connectors"
	"weir/internal/deadletter"
	"weir/internal/kafkaclient"
	"weir/internal/testkit"
)

// Env is what the suite gives a definition: the broker the connectors
// run against and a schema registry on it.
type Env struct {
	Broker   *testbroker.Broker
	Registry string // schema registry URL
	rt       *connectors.Runtime
}

// BadConfig is a kind's own bad config: Change applied to a good config
// must fail with an error that names Setting.
type BadConfig struct {
	Name    string
	Setting string
	Change  func(cfg map[string]any)
}

// MessageID is a SourceCase.ID for kinds whose records are JSON events
// with a "message" field starting "id=N" (the file and syslog kinds).
func MessageID(r *kgo.Record) (int, error) {
	var ev struct{ Message string }
	if err := json.Unmarshal(r.Value, &ev); err != nil {
		return 0, err
	}
	var id int
	_, err := fmt.Sscanf(ev.Message, "id=%d", &id)
	return id, err
}

// waitTimeout bounds every wait of the suite: long enough for a loaded
// machine, reached only when a kind fails.
const waitTimeout = 60 * time.Second

func newEnv(t *testing.T) *Env {
	b := testbroker.Start(t)
	lg := zap.NewNop()
	if testing.Verbose() {
		lg = zaptest.NewLogger(t)
	}
	return &Env{Broker: b, Registry: b.Registry(t),
		rt: &connectors.Runtime{Client: kafkaclient.Options{Brokers: []string{b.Addr}}, Logger: lg, Metrics: connectors.NewMetricSet(nil)}}
}

// connectorName is a connector (and topic) name unique to the subtest.
func connectorName(t *testing.T) string {
	return "conf-" + strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
}

func lookup(t *testing.T, kind string) *connectors.Kind {
	t.Helper()
	k, err := connectors.Default.Lookup(kind)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func copyConfig(raw map[string]any) map[string]any {
	m := make(map[string]any, len(raw))
	for k, v := range raw {
		m[k] = v
	}
	return m
}

// ReadAll returns the records of topic from its start to its end offsets
// at the time of the call (nil for a topic that does not exist yet).
func (e *Env) ReadAll(topic string) ([]*kgo.Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kafkaclient.New(kafkaclient.Options{Brokers: []string{e.Broker.Addr}})
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	want := map[int32]int64{}
	offs := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			want[o.Partition] = o.Offset
			offs[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(want) == 0 {
		return nil, nil
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs})
	var out []*kgo.Record
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s: %w", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := want[r.Partition]; ok && r.Offset < end {
				out = append(out, r)
				if r.Offset+1 >= end {
					delete(want, r.Partition)
				}
			}
		})
	}
	return out, nil
}

// waitIDs waits until got() holds every id in want (ids outside want are
// other cases' and ignored) and returns how often each wanted id was
// seen.
func waitIDs(t *testing.T, k *task, want []int, got func() ([]int, error)) map[int]int {
	t.Helper()
	var seen map[int]int
	wanted := map[int]bool{}
	for _, id := range want {
		wanted[id] = true
	}
	k.waitFor(t, func() error {
		ids, err := got()
		if err != nil {
			return err
		}
		m := map[int]int{}
		for _, id := range ids {
			if wanted[id] {
				m[id]++
			}
		}
		seen = m
		if len(m) < len(wanted) {
			var missing []int
			for id := range wanted {
				if m[id] == 0 {
					missing = append(missing, id)
				}
			}
			sort.Ints(missing)
			if len(missing) > 10 {
				missing = missing[:10]
			}
			return fmt.Errorf("%d of %d records delivered; missing %v", len(m), len(wanted), missing)
		}
		return nil
	})
	return seen
}

// noDuplicates fails t if an id was delivered more than once.
func noDuplicates(t *testing.T, seen map[int]int) {
	t.Helper()
	var dups []string
	for id, n := range seen {
		if n > 1 {
			dups = append(dups, fmt.Sprintf("%d×%d", id, n))
		}
	}
	if len(dups) > 0 {
		sort.Strings(dups)
		t.Fatalf("delivered more than once after a clean stop: %v", dups)
	}
}

func ids(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// header returns the value of r's header key.
func header(r *kgo.Record, key string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// task is one running connector task.
type task struct {
	cancel context.CancelFunc
	errc   chan error
	done   chan struct{}
	opens  *atomic.Int32
	closes *atomic.Int32
}

// startTask runs fn (RunSource or RunSink) until stopped, and at the end
// of t.
func startTask(t *testing.T, opens, closes *atomic.Int32, fn func(ctx context.Context) error) *task {
	ctx, cancel := context.WithCancel(context.Background())
	k := &task{cancel: cancel, errc: make(chan error, 1), done: make(chan struct{}), opens: opens, closes: closes}
	go func() {
		k.errc <- fn(ctx)
		close(k.done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-k.done:
		case <-time.After(waitTimeout):
			t.Errorf("the connector did not stop within %v", waitTimeout)
		}
	})
	return k
}

// waitFor polls cond (testkit.CheckFor), failing at once if the task
// stopped.
func (k *task) waitFor(t *testing.T, cond func() error) {
	t.Helper()
	testkit.CheckFor(t, waitTimeout, func() error {
		if err := k.failed(); err != nil {
			return testkit.Stop(fmt.Errorf("the connector stopped: %w", err))
		}
		return cond()
	})
}

// stop cancels the task and returns RunSource's/RunSink's error.
func (k *task) stop(t *testing.T) error {
	t.Helper()
	k.cancel()
	select {
	case err := <-k.errc:
		return err
	case <-time.After(waitTimeout):
		t.Fatalf("the connector did not stop within %v", waitTimeout)
		return nil
	}
}

// stopClean stops the task and fails t unless it stopped with nil after
// one Open and one Close.
func (k *task) stopClean(t *testing.T) {
	t.Helper()
	if err := k.stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if o, c := k.opens.Load(), k.closes.Load(); o != 1 || c != 1 {
		t.Fatalf("Open called %d times, Close %d times; want 1 and 1", o, c)
	}
}

// failed returns the task's error if it has already stopped.
func (k *task) failed() error {
	select {
	case err := <-k.errc:
		k.errc <- err
		if err == nil {
			err = errors.New("the connector stopped")
		}
		return err
	default:
		return nil
	}
}

// IDsOfLines reads the ids of JSON lines {"id":N,...} (as the file and
// stdout sinks write the suite's records); other lines are skipped.
func IDsOfLines(b []byte) []int {
	var out []int
	for _, ln := range strings.Split(string(b), "\n") {
		var v struct{ ID *int }
		if json.Unmarshal([]byte(ln), &v) == nil && v.ID != nil {
			out = append(out, *v.ID)
		}
	}
	return out
}

// IDsOfKeys reads the ids of records keyed by their decimal id.
func IDsOfKeys(rs []*kgo.Record) []int {
	out := make([]int, 0, len(rs))
	for _, r := range rs {
		if id, err := strconv.Atoi(string(r.Key)); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// deadLetter waits until the dead-letter topic of connector name holds
// one record and returns it, after checking its headers: each of want's
// has its value, and the error message header passes message.
func deadLetter(t *testing.T, env *Env, run *task, name string, want map[string]string, message func(string) bool) *kgo.Record {
	t.Helper()
	dlq := deadletter.Topic(name)
	var dead []*kgo.Record
	run.waitFor(t, func() error {
		var err error
		if dead, err = env.ReadAll(dlq); err != nil {
			return err
		}
		if len(dead) != 1 {
			return fmt.Errorf("%d records in %s, want 1", len(dead), dlq)
		}
		return nil
	})
	r := dead[0]
	want[deadletter.HeaderConnector] = name
	for h, w := range want {
		if v, _ := header(r, h); v != w {
			t.Errorf("header %s = %q, want %q", h, v, w)
		}
	}
	if v, _ := header(r, deadletter.HeaderMessage); !message(v) {
		t.Errorf("header %s = %q: not the error expected", deadletter.HeaderMessage, v)
	}
	return r
}

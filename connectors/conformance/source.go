package conformance

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/connectors"
	"weir/internal/deadletter"
)

// SourceDef is how the suite drives one source kind.
type SourceDef struct {
	// Kind is the registry name.
	Kind string
	// Push is set for sources that receive their input (HTTP, syslog):
	// their peers write only while the connector runs.
	Push bool
	// New prepares one case against the peer: a connector called name
	// whose records go to a topic of its own. It runs once per subtest.
	New func(t *testing.T, env *Env, name string) *SourceCase
	// BadConfigs are the kind's own bad configs, beyond the generic ones
	// the suite derives from its spec.
	BadConfigs []BadConfig
}

// SourceCase is one connector of a source kind and its peer.
type SourceCase struct {
	// Config is the connector's raw config, as a pipeline block gives it.
	Config map[string]any
	// Topic is where its records go.
	Topic string
	// Write makes the peer produce one input per id; each becomes one
	// record from which ID reads the id back.
	Write func(ids ...int)
	// WriteLarge makes the peer produce one input whose record is at
	// least size bytes, with id id.
	WriteLarge func(id, size int)
	// ID is the id of a record of Topic.
	ID func(r *kgo.Record) (int, error)
	// Opened, if set, is given the kind's source after each successful
	// Open (a push source's listen address is known then). The suite
	// writes input only after Open returned.
	Opened func(src connectors.Source)
}

// TestSource runs the suite on a source kind.
func TestSource(t *testing.T, d SourceDef) {
	env := newEnv(t)
	k := lookup(t, d.Kind)
	if !k.IsSource() {
		t.Fatalf("kind %q is not a source", d.Kind)
	}
	t.Run("open_close", func(t *testing.T) {
		c := d.New(t, env, connectorName(t))
		run := startSource(t, env, k, c)
		c.Write(ids(1, 5)...)
		waitIDs(t, run, ids(1, 5), c.ids(t, env))
		run.stopClean(t)
	})
	t.Run("restart", func(t *testing.T) {
		c := d.New(t, env, connectorName(t))
		run := startSource(t, env, k, c)
		c.Write(ids(1, 20)...)
		waitIDs(t, run, ids(1, 20), c.ids(t, env))
		run.stopClean(t)
		want := ids(1, 20)
		if !d.Push {
			c.Write(ids(21, 40)...) // while the connector is down
			want = ids(1, 40)
		}
		run = startSource(t, env, k, c)
		c.Write(ids(41, 60)...)
		want = append(want, ids(41, 60)...)
		noDuplicates(t, waitIDs(t, run, want, c.ids(t, env)))
		run.stopClean(t)
	})
	t.Run("dead_letter", func(t *testing.T) {
		const maxBytes = 8 << 10
		name := connectorName(t)
		c := d.New(t, env, name)
		limit := fmt.Sprint(maxBytes)
		env.Broker.CreateTopic(c.Topic, 1, map[string]*string{"max.message.bytes": &limit})
		run := startSource(t, env, k, c)
		c.Write(1)
		waitIDs(t, run, []int{1}, c.ids(t, env))
		c.WriteLarge(2, 2*maxBytes)
		c.Write(3, 4)
		waitIDs(t, run, []int{1, 3, 4}, c.ids(t, env))
		r := deadLetter(t, env, run, name, map[string]string{deadletter.HeaderTopic: c.Topic},
			func(m string) bool { return strings.Contains(m, "MESSAGE_TOO_LARGE") })
		if id, err := c.ID(r); err != nil || id != 2 {
			t.Errorf("dead letter holds record %d (%v), want 2", id, err)
		}
		run.stopClean(t)
		// The dead-lettered record counts as handled: a restart neither
		// writes it again nor loses what follows.
		run = startSource(t, env, k, c)
		c.Write(5)
		noDuplicates(t, waitIDs(t, run, []int{1, 3, 4, 5}, c.ids(t, env)))
		run.stopClean(t)
		if dead, err := env.ReadAll(deadletter.Topic(name)); err != nil || len(dead) != 1 {
			t.Fatalf("%d dead letters after the restart (%v), want 1", len(dead), err)
		}
	})
	t.Run("bad_config", func(t *testing.T) {
		good := d.New(t, env, connectorName(t))
		for _, bc := range append(badConfigs(k, good.Config), d.BadConfigs...) {
			t.Run(bc.Name, func(t *testing.T) {
				raw := copyConfig(good.Config)
				bc.Change(raw)
				checkBadConfig(t, env, k, raw, bc.Setting, good.Topic)
			})
		}
	})
}

// ids reads the ids of the records in c.Topic.
func (c *SourceCase) ids(t *testing.T, env *Env) func() ([]int, error) {
	return func() ([]int, error) {
		rs, err := env.ReadAll(c.Topic)
		if err != nil {
			return nil, err
		}
		out := make([]int, 0, len(rs))
		for _, r := range rs {
			id, err := c.ID(r)
			if err != nil {
				t.Errorf("record %s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
				continue
			}
			out = append(out, id)
		}
		return out, nil
	}
}

// startSource builds c's connector as weir run does and runs it.
func startSource(t *testing.T, env *Env, k *connectors.Kind, c *SourceCase) *task {
	t.Helper()
	cfg, err := k.Spec.Decode(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	name := connectorName(t)
	src, err := k.NewSource(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := &source{Source: src, opened: make(chan error, 1)}
	run := startTask(t, &w.opens, &w.closes, func(ctx context.Context) error {
		return env.rt.RunSource(ctx, name, w, connectors.SourceOptions{Topic: c.Topic, CommitInterval: 100 * time.Millisecond})
	})
	select {
	case err := <-w.opened:
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
	case err := <-run.errc:
		t.Fatalf("the connector stopped before Open returned: %v", err)
	case <-time.After(waitTimeout):
		t.Fatalf("Open did not return within %v", waitTimeout)
	}
	if c.Opened != nil {
		c.Opened(src)
	}
	return run
}

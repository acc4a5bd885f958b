package connectors

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Kind is one connector technology ("file", "elasticsearch", ...): its
// declared config spec and a constructor. Exactly one of NewSource and
// NewSink is set.
type Kind struct {
	Name string
	Doc  string
	Spec Spec
	// NewSource builds a source named name from a config already decoded
	// and validated by Spec.Decode.
	NewSource func(name string, cfg Config) (Source, error)
	// NewSink builds a sink named name from a decoded config.
	NewSink func(name string, cfg Config) (Sink, error)
	// Placement says where a source of this kind runs when `weir run`
	// workers form a group (pipelines/workgroup): PerWorker (the zero
	// value: each worker reads its own host's data) or Singleton (one
	// worker of the group runs it). Sinks share partitions instead.
	Placement Placement
}

// Placement is where a source kind runs in a group of workers.
type Placement int

const (
	// PerWorker sources run on every worker, each reading its own host's
	// data (file tail, syslog, HTTP); their positions are per worker.
	PerWorker Placement = iota
	// Singleton sources run on exactly one worker of the group (a
	// database's change stream: mysql); another takes over from the last
	// committed position when it dies, fenced by the source's
	// transactional id so two never write at once.
	Singleton
)

func (p Placement) String() string {
	if p == Singleton {
		return "singleton"
	}
	return "per-worker"
}

// IsSource reports whether k builds sources.
func (k *Kind) IsSource() bool { return k.NewSource != nil }

// Registry maps kind names to kinds. The zero value is empty and ready;
// Default holds the kinds weir ships (each registers itself from init).
type Registry struct {
	mu    sync.RWMutex
	kinds map[string]*Kind
}

// Default is the registry of the connector kinds built into weir.
var Default = &Registry{}

// Register adds k. It panics on a duplicate or malformed kind: kinds are
// registered from init functions, so that is a programming error.
func (r *Registry) Register(k *Kind) {
	if k.Name == "" || (k.NewSource == nil) == (k.NewSink == nil) {
		panic(fmt.Sprintf("connectors: kind %q must have a name and exactly one of NewSource/NewSink", k.Name))
	}
	if err := k.Spec.check(); err != nil {
		panic(fmt.Sprintf("connectors: kind %q: %v", k.Name, err))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kinds == nil {
		r.kinds = map[string]*Kind{}
	}
	if _, dup := r.kinds[k.Name]; dup {
		panic(fmt.Sprintf("connectors: kind %q registered twice", k.Name))
	}
	r.kinds[k.Name] = k
}

// Lookup returns the kind called name, or an error wrapping ErrUnknownKind
// that lists the known kinds.
func (r *Registry) Lookup(name string) (*Kind, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if k, ok := r.kinds[name]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownKind, name, strings.Join(r.namesLocked(), ", "))
}

// Kinds returns every registered kind, sorted by name.
func (r *Registry) Kinds() []*Kind {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Kind, 0, len(r.kinds))
	for _, n := range r.namesLocked() {
		out = append(out, r.kinds[n])
	}
	return out
}

func (r *Registry) namesLocked() []string {
	names := make([]string, 0, len(r.kinds))
	for n := range r.kinds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

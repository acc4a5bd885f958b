package pipelines

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/hashicorp/hcl/v2"

	"weir/pipelines/expr"
)

// Event is one record going through transform steps.
type Event struct {
	// Fields is the record's value as an object.
	Fields *expr.Object
	// Key is the record key (nil: none).
	Key []byte
	// Time is the record timestamp (zero: unset); parse_timestamp sets it.
	Time time.Time
	// Topic is the destination chosen by a route step ("": the default).
	Topic string
}

// Outcome is what a chain decided for an event.
type Outcome int

const (
	// Keep: write the event to its destination.
	Keep Outcome = iota
	// Drop: a filter (or a step with on_error = "drop") removed it.
	Drop
	// DeadLetter: a step with on_error = "dead_letter" failed on it.
	DeadLetter
)

// ErrStep wraps a step's failure on one record.
var ErrStep = errors.New("transform step failed")

// Step is one compiled transform step, built by its StepKind. Apply
// changes ev in place; keep false drops the record (a filter); an error
// is a failure on this record, handled by the step's on_error.
type Step interface {
	Apply(ev *Event) (keep bool, err error)
}

type chainStep struct {
	kind    string
	where   hcl.Range
	onError Outcome // what a failure does: Keep (continue), Drop, DeadLetter
	s       Step
}

// Chain is a compiled list of transform steps. It is immutable and safe
// for concurrent use.
type Chain struct {
	steps []chainStep
}

// Len is the number of steps.
func (c *Chain) Len() int {
	if c == nil {
		return 0
	}
	return len(c.steps)
}

// hasKind reports whether a step of the given block type is in the chain.
func (c *Chain) hasKind(kind string) bool {
	for _, st := range c.steps {
		if st.kind == kind {
			return true
		}
	}
	return false
}

// setsTime reports whether a step of the chain sets the record time
// (parse_timestamp with set_record_time, the default).
func (c *Chain) setsTime() bool {
	if c == nil {
		return false
	}
	for _, st := range c.steps {
		if p, ok := st.s.(*parseTimestampStep); ok && p.setTime {
			return true
		}
	}
	return false
}

// Apply runs the steps over ev in order. The returned error (wrapping
// ErrStep, naming the step and its file:line) reports the first step
// that failed; the outcome says what became of the event: on_error
// "keep" (the default) continues with the next step, so err may be
// non-nil with Keep.
func (c *Chain) Apply(ev *Event) (Outcome, error) { return c.apply(ev, nil) }

// apply is Apply; a non-nil tap sees the event before and after each
// step (step 1-based, after with the step's outcome).
func (c *Chain) apply(ev *Event, tap *stepTap) (Outcome, error) {
	var firstErr error
	for i := range c.steps {
		st := &c.steps[i]
		if tap != nil {
			tap.before(i+1, ev)
		}
		keep, err := st.s.Apply(ev)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("%w: %s at %s: %w", ErrStep, st.kind, st.where, err)
			}
			if st.onError != Keep {
				if tap != nil {
					tap.after(i+1, ev, st.onError)
				}
				return st.onError, firstErr
			}
			if tap != nil {
				tap.after(i+1, ev, Keep)
			}
			continue
		}
		if !keep {
			if tap != nil {
				tap.after(i+1, ev, Drop)
			}
			return Drop, firstErr
		}
		if tap != nil {
			tap.after(i+1, ev, Keep)
		}
	}
	return Keep, firstErr
}

// kinds are the block types of the steps, in order.
func (c *Chain) kinds() []string {
	if c == nil {
		return nil
	}
	out := make([]string, len(c.steps))
	for i, st := range c.steps {
		out[i] = st.kind
	}
	return out
}

func fieldBytes(ev *Event, field string) ([]byte, error) {
	v, ok := ev.Fields.Get(field)
	if !ok || v == nil {
		return nil, fmt.Errorf("field %q is missing", field)
	}
	switch x := v.(type) {
	case string:
		// Read only: parsers never modify their input.
		return unsafe.Slice(unsafe.StringData(x), len(x)), nil
	case []byte:
		return x, nil
	}
	return nil, fmt.Errorf("field %q is a %s, not a string", field, expr.TypeName(v))
}

func fieldString(ev *Event, field string) (string, error) {
	v, ok := ev.Fields.Get(field)
	if !ok || v == nil {
		return "", fmt.Errorf("field %q is missing", field)
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case []byte:
		return string(x), nil
	}
	return "", fmt.Errorf("field %q is a %s, not a string", field, expr.TypeName(v))
}

// sortedAttrs returns attributes in source order.
func sortedAttrs(attrs hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Range.Filename != out[j].Range.Filename {
			return out[i].Range.Filename < out[j].Range.Filename
		}
		return out[i].Range.Start.Byte < out[j].Range.Start.Byte
	})
	return out
}

func quoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

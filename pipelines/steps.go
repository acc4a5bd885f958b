package pipelines

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/hashicorp/hcl/v2"
)

// Event is one record going through transform steps.
type Event struct {
	// Fields is the record's value as an object.
	Fields *Object
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

// step is one compiled transform step.
type step interface {
	apply(ev *Event) (keep bool, err error)
}

type chainStep struct {
	kind    string
	where   hcl.Range
	onError Outcome // what a failure does: Keep (continue), Drop, DeadLetter
	s       step
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
func (c *Chain) Apply(ev *Event) (Outcome, error) {
	var firstErr error
	for i := range c.steps {
		st := &c.steps[i]
		keep, err := st.s.apply(ev)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("%w: %s at %s: %w", ErrStep, st.kind, st.where, err)
			}
			if st.onError != Keep {
				return st.onError, firstErr
			}
			continue
		}
		if !keep {
			return Drop, firstErr
		}
	}
	return Keep, firstErr
}

// --- parse_json

type parseJSONStep struct {
	field, target string
	removeField   bool
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
	return nil, fmt.Errorf("field %q is a %s, not a string", field, typeName(v))
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
	return "", fmt.Errorf("field %q is a %s, not a string", field, typeName(v))
}

func (s *parseJSONStep) apply(ev *Event) (bool, error) {
	b, err := fieldBytes(ev, s.field)
	if err != nil {
		return true, err
	}
	if s.target != "" {
		v, err := parseJSON(b)
		if err != nil {
			return true, fmt.Errorf("field %q: %w", s.field, err)
		}
		if s.removeField {
			ev.Fields.Delete(s.field)
		}
		ev.Fields.Set(s.target, v)
		return true, nil
	}
	// The object's members are parsed straight onto the end of the
	// event's fields, then merged as Set would (a member replaces the
	// field of its name, the last of duplicates wins).
	o := ev.Fields
	n := len(o.Keys)
	if err := parseObjectInto(o, b); err != nil {
		var no notObjectError
		if errors.As(err, &no) {
			return true, fmt.Errorf("field %q holds a JSON %s, not an object (set target to keep it)", s.field, no.typ)
		}
		return true, fmt.Errorf("field %q: %w", s.field, err)
	}
	if s.removeField {
		for i, k := range o.Keys[:n] {
			if k == s.field {
				copy(o.Keys[i:], o.Keys[i+1:])
				copy(o.Vals[i:], o.Vals[i+1:])
				o.Keys, o.Vals = o.Keys[:len(o.Keys)-1], o.Vals[:len(o.Vals)-1]
				n--
				break
			}
		}
	}
	w := n
	for j := n; j < len(o.Keys); j++ {
		k, v := o.Keys[j], o.Vals[j]
		i := 0
		for i < w && o.Keys[i] != k {
			i++
		}
		if i < w {
			o.Vals[i] = v
			continue
		}
		o.Keys[w], o.Vals[w] = k, v
		w++
	}
	clear(o.Keys[w:])
	clear(o.Vals[w:])
	o.Keys, o.Vals = o.Keys[:w], o.Vals[:w]
	return true, nil
}

// --- parse_regex

type parseRegexStep struct {
	field  string
	re     *regexp.Regexp
	groups []int // submatch indexes of named groups
	names  []string
}

func (s *parseRegexStep) apply(ev *Event) (bool, error) {
	str, err := fieldString(ev, s.field)
	if err != nil {
		return true, err
	}
	m := s.re.FindStringSubmatchIndex(str)
	if m == nil {
		return true, fmt.Errorf("field %q does not match %s", s.field, s.re)
	}
	for i, g := range s.groups {
		if m[2*g] >= 0 {
			ev.Fields.Set(s.names[i], str[m[2*g]:m[2*g+1]])
		}
	}
	return true, nil
}

// --- parse_timestamp

type parseTimestampStep struct {
	field, target string
	layout        string // Go layout, or unix, unix_ms, unix_us, unix_ns
	loc           *time.Location
	setTime       bool
}

var namedLayouts = map[string]string{
	"rfc3339":     time.RFC3339Nano,
	"rfc3339nano": time.RFC3339Nano,
	"rfc1123":     time.RFC1123,
	"rfc1123z":    time.RFC1123Z,
	"rfc822":      time.RFC822,
	"rfc822z":     time.RFC822Z,
	"ansic":       time.ANSIC,
	"unixdate":    time.UnixDate,
	"kitchen":     time.Kitchen,
	"stamp":       time.Stamp,
	"stampmilli":  time.StampMilli,
	"datetime":    time.DateTime,
	"common_log":  "02/Jan/2006:15:04:05 -0700",
}

func (s *parseTimestampStep) apply(ev *Event) (bool, error) {
	v, ok := ev.Fields.Get(s.field)
	if !ok || v == nil {
		return true, fmt.Errorf("field %q is missing", s.field)
	}
	var t time.Time
	if strings.HasPrefix(s.layout, "unix") {
		n, err := toNumber(v)
		if err != nil {
			return true, fmt.Errorf("field %q: %w", s.field, err)
		}
		f, _ := toFloat(n)
		switch s.layout {
		case "unix":
			t = time.Unix(0, int64(f*1e9))
		case "unix_ms":
			t = time.UnixMilli(int64(f))
		case "unix_us":
			t = time.UnixMicro(int64(f))
		default:
			t = time.Unix(0, int64(f))
		}
	} else {
		str, err := toString(v)
		if err != nil {
			return true, fmt.Errorf("field %q: %w", s.field, err)
		}
		if t, err = time.ParseInLocation(s.layout, str, s.loc); err != nil {
			return true, fmt.Errorf("field %q: %q does not match layout %q", s.field, str, s.layout)
		}
	}
	ev.Fields.Set(s.target, t)
	if s.setTime {
		ev.Time = t
	}
	return true, nil
}

// --- set

type setStep struct {
	names []string
	fns   []evalFn
}

func (s *setStep) apply(ev *Event) (bool, error) {
	// Every value is computed from the record as it was before the step.
	var stack [8]any
	vals := stack[:0]
	for _, f := range s.fns {
		v, err := f(ev.Fields)
		if err != nil {
			return true, err
		}
		vals = append(vals, v)
	}
	for i, n := range s.names {
		ev.Fields.Set(n, vals[i])
	}
	return true, nil
}

// --- rename, remove

type renameStep struct{ from, to []string }

func (s *renameStep) apply(ev *Event) (bool, error) {
	for i := range s.from {
		ev.Fields.Rename(s.from[i], s.to[i])
	}
	return true, nil
}

type removeStep struct{ fields []string }

func (s *removeStep) apply(ev *Event) (bool, error) {
	for _, f := range s.fields {
		ev.Fields.Delete(f)
	}
	return true, nil
}

// --- filter, route

type filterStep struct{ cond evalFn }

func (s *filterStep) apply(ev *Event) (bool, error) {
	v, err := s.cond(ev.Fields)
	if err != nil {
		return true, err
	}
	return truthy(v), nil
}

type routeStep struct {
	topic string
	cond  evalFn
}

func (s *routeStep) apply(ev *Event) (bool, error) {
	if ev.Topic != "" {
		return true, nil // an earlier route won
	}
	v, err := s.cond(ev.Fields)
	if err != nil {
		return true, err
	}
	if truthy(v) {
		ev.Topic = s.topic
	}
	return true, nil
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

package pipelines

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"weir/pipelines/codec"
	"weir/pipelines/expr"
)

// checkTest compares the records that came out of a test's target with
// its output blocks, in order, and returns one diagnostic per
// difference, at the expectation that failed.
func checkTest(t *Test, recs []TestRecord) hcl.Diagnostics {
	var diags hcl.Diagnostics
	fail := func(rng hcl.Range, summary, detail string) {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary,
			Detail: fmt.Sprintf("test %q: %s", t.Name, detail), Subject: rng.Ptr()})
	}
	if t.NoOutput {
		if len(recs) > 0 {
			fail(t.NoOutputRange, "Expected no output",
				fmt.Sprintf("%s came out of %s; the first: %s.", plural(len(recs), "record"), t.Target, describeRecord(&recs[0])))
		}
		return diags
	}
	for i, o := range t.Outputs {
		if i >= len(recs) {
			fail(o.Range, "Missing output", fmt.Sprintf("output %d expects a record, but %s gave %s.",
				i+1, plural(len(t.Inputs), "input"), plural(len(recs), "record")))
			continue
		}
		checkOutput(i, o, &recs[i], fail)
	}
	for i := len(t.Outputs); i < len(recs); i++ {
		fail(t.Range, "Unexpected output", fmt.Sprintf("record %d of %d has no output block to match it: %s.",
			i+1, len(recs), describeRecord(&recs[i])))
	}
	return diags
}

func checkOutput(i int, o *TestOutput, r *TestRecord, fail func(hcl.Range, string, string)) {
	what := fmt.Sprintf("output %d", i+1)
	if o.DeadLetter != r.DeadLetter {
		if o.DeadLetter {
			fail(o.DLRange, "Record not dead-lettered", fmt.Sprintf("%s: the record was written to %s: %s.", what, r.Topic, describeValue(r)))
		} else {
			fail(o.Range, "Record dead-lettered", fmt.Sprintf("%s: the record went to the dead-letter topic %s: %s.", what, r.Topic, r.Error))
		}
		return
	}
	if o.Error != "" && !strings.Contains(r.Error, o.Error) {
		fail(o.ErrRange, "Output differs", fmt.Sprintf("%s: the dead letter's error is %q, which does not contain %q.", what, r.Error, o.Error))
	}
	if o.Topic != "" && o.Topic != r.Topic {
		fail(o.TopicRng, "Output differs", fmt.Sprintf("%s: topic is %s, want %s.", what, r.Topic, o.Topic))
	}
	if o.KeySet && !bytes.Equal(o.Key, r.Key) || o.KeySet && (o.Key == nil) != (r.Key == nil) {
		fail(o.KeyRange, "Output differs", fmt.Sprintf("%s: key is %s, want %s.", what, showKey(r.Key), showKey(o.Key)))
	}
	if !o.Timestamp.IsZero() && !o.Timestamp.Equal(r.Timestamp) {
		got := "unset"
		if !r.Timestamp.IsZero() {
			got = r.Timestamp.UTC().Format(time.RFC3339Nano)
		}
		fail(o.TimeRange, "Output differs", fmt.Sprintf("%s: timestamp is %s, want %s.", what, got, o.Timestamp.UTC().Format(time.RFC3339Nano)))
	}
	for _, k := range sortedKeys(o.Headers) {
		var got []byte
		found := false
		for _, h := range r.Headers {
			if h.Key == k {
				got, found = h.Value, true
			}
		}
		if !found {
			fail(o.HdrRange, "Output differs", fmt.Sprintf("%s: header %q is missing, want %q.", what, k, o.Headers[k]))
		} else if string(got) != o.Headers[k] {
			fail(o.HdrRange, "Output differs", fmt.Sprintf("%s: header %q is %q, want %q.", what, k, got, o.Headers[k]))
		}
	}
	if (o.Value != nil || o.Fields != nil || len(o.Conditions) > 0) && r.Fields == nil {
		why := "it is a tombstone (no value)"
		if r.DecodeErr != nil {
			why = r.DecodeErr.Error()
		}
		fail(o.Range, "Output differs", fmt.Sprintf("%s: the record's value cannot be read: %s.", what, why))
		return
	}
	if o.Value != nil {
		diffObject(o.Value, r.Fields, true, "", o.ValueRanges, func(rng hcl.Range, msg string) {
			fail(rng, "Output differs", fmt.Sprintf("%s (value): %s", what, msg))
		})
	}
	if o.Fields != nil {
		diffObject(o.Fields, r.Fields, false, "", o.FieldsRanges, func(rng hcl.Range, msg string) {
			fail(rng, "Output differs", fmt.Sprintf("%s (fields): %s", what, msg))
		})
	}
	for _, c := range o.Conditions {
		v, err := c.Fn(r.Fields)
		switch {
		case err != nil:
			fail(c.Range, "Condition failed", fmt.Sprintf("%s: %s: %v; the record: %s.", what, c.Text, err, show(r.Fields)))
		case !expr.Truthy(v):
			fail(c.Range, "Condition failed", fmt.Sprintf("%s: %s is %s for the record %s.", what, c.Text, show(v), show(r.Fields)))
		}
	}
}

// diffObject reports each field of want that got lacks or holds
// differently (and, exact, each field got has beyond want), at the
// field's range in the output block.
func diffObject(want, got *expr.Object, exact bool, path string, ranges map[string]hcl.Range, emit func(hcl.Range, string)) {
	at := func(p string) hcl.Range {
		for {
			if r, ok := ranges[p]; ok {
				return r
			}
			i := strings.LastIndexByte(p, '.')
			if i < 0 {
				return ranges[""]
			}
			p = p[:i]
		}
	}
	for i, k := range want.Keys {
		p := path + k
		wv := want.Vals[i]
		gv, ok := got.Get(k)
		if !ok {
			emit(at(p), fmt.Sprintf("field %q is missing, want %s.", p, show(wv)))
			continue
		}
		wo, wIsObj := wv.(*expr.Object)
		if gobj, gIsObj := gv.(*expr.Object); wIsObj && gIsObj {
			diffObject(wo, gobj, exact, p+".", ranges, emit)
			continue
		}
		if !valuesEqual(wv, gv) {
			emit(at(p), fmt.Sprintf("field %q is %s, want %s.", p, show(gv), show(wv)))
		}
	}
	if !exact {
		return
	}
	for i, k := range got.Keys {
		if _, ok := want.Get(k); !ok {
			emit(at(strings.TrimSuffix(path, ".")), fmt.Sprintf("field %q = %s is not expected (value compares every field; fields = {...} checks only those it names).", path+k, show(got.Vals[i])))
		}
	}
}

// valuesEqual is expr.Equal where an expected string also matches a
// timestamp it parses to (RFC 3339) and objects compare exactly.
func valuesEqual(want, got any) bool {
	if gt, ok := got.(time.Time); ok {
		if ws, ok := want.(string); ok {
			wt, err := time.Parse(time.RFC3339Nano, ws)
			return err == nil && wt.Equal(gt)
		}
	}
	switch w := want.(type) {
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !valuesEqual(w[i], g[i]) {
				return false
			}
		}
		return true
	case *expr.Object:
		g, ok := got.(*expr.Object)
		if !ok || g.Len() != w.Len() {
			return false
		}
		for i, k := range w.Keys {
			gv, ok := g.Get(k)
			if !ok || !valuesEqual(w.Vals[i], gv) {
				return false
			}
		}
		return true
	}
	return expr.Equal(want, got)
}

// show renders a value as JSON (text as it is, non-ASCII included).
func show(v any) string {
	if ts, ok := v.(time.Time); ok {
		return strconv.Quote(ts.UTC().Format(time.RFC3339Nano))
	}
	return string(codec.AppendJSON(nil, v))
}

func showKey(k []byte) string {
	if k == nil {
		return "null (no key)"
	}
	return strconv.Quote(string(k))
}

func describeValue(r *TestRecord) string {
	switch {
	case r.Fields != nil:
		return show(r.Fields)
	case r.Value == nil:
		return "a tombstone"
	}
	return strconv.Quote(string(r.Value))
}

func describeRecord(r *TestRecord) string {
	s := fmt.Sprintf("topic %s, key %s, value %s", r.Topic, showKey(r.Key), describeValue(r))
	if r.DeadLetter {
		s += fmt.Sprintf(" (dead letter: %s)", r.Error)
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

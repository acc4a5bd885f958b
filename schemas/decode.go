package schemas

import (
	"errors"
	"fmt"
	"math/big"
	"time"
)

// ErrUnresolvable is wrapped by errors saying data written with one schema
// cannot be read with another (the Avro spec's resolution rules).
var ErrUnresolvable = errors.New("writer schema cannot be resolved to reader schema")

// decFn decodes one value written with the writer schema into the reader
// schema's native form (goavro's: map[string]any records, []any arrays,
// map[string]any maps, nil or map[string]any{branch: value} unions,
// string enums, []byte fixed, and time.Time, time.Duration, *big.Rat for
// the logical types goavro supports).
type decFn func(r *reader) any

// skipFn skips one writer value.
type skipFn func(r *reader)

// Decoder decodes Avro binary written with one schema into the native form
// of another: a compiled resolution plan. It is immutable and safe for
// concurrent use.
type Decoder struct {
	writer, reader *Schema
	dec            decFn
}

// NewDecoder compiles the plan that reads data written with writer as
// reader (pass the same schema twice for no resolution). It fails, wrapping
// ErrUnresolvable, when no datum of writer could be read as reader; a
// writer union branch with no match only fails the data that uses it.
func NewDecoder(writer, reader *Schema) (*Decoder, error) {
	c := &decCompiler{memo: map[[2]*Node]*decFn{}}
	fn, err := c.compile(writer.Root, reader.Root, "")
	if err != nil {
		return nil, err
	}
	return &Decoder{writer: writer, reader: reader, dec: fn}, nil
}

// Writer returns the schema the data was written with.
func (d *Decoder) Writer() *Schema { return d.writer }

// Reader returns the schema values are decoded into.
func (d *Decoder) Reader() *Schema { return d.reader }

// Decode decodes one datum; the bytes must hold exactly one value.
func (d *Decoder) Decode(b []byte) (any, error) {
	r := reader{b: b, budget: zeroSizeItemBudget}
	v := d.dec(&r)
	if r.err != nil {
		return nil, r.err
	}
	if r.pos != len(b) {
		return nil, fmt.Errorf("%w: %d trailing bytes after the datum", ErrMalformed, len(b)-r.pos)
	}
	return v, nil
}

type decCompiler struct {
	memo map[[2]*Node]*decFn
}

func unresolvable(path string, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrUnresolvable, pathOr(path), fmt.Sprintf(format, args...))
}

// namesMatch is the Avro rule for named types: the unqualified names are
// equal, or one of the reader's aliases names the writer.
func namesMatch(w, r *Node) bool {
	if shortName(w.Name) == shortName(r.Name) {
		return true
	}
	for _, a := range r.Aliases {
		if a == w.Name || shortName(a) == shortName(w.Name) {
			return true
		}
	}
	return false
}

// promotable reports whether a writer value of kind w reads as kind r.
func promotable(w, r Kind) bool {
	switch w {
	case Int:
		return r == Long || r == Float || r == Double
	case Long:
		return r == Float || r == Double
	case Float:
		return r == Double
	case String:
		return r == Bytes
	case Bytes:
		return r == String
	}
	return false
}

// sameType reports whether w and r are the same type for union branch
// selection (same primitive kind, or same named type by name).
func sameType(w, r *Node) bool {
	if w.Kind != r.Kind {
		return false
	}
	if w.Kind.named() {
		return namesMatch(w, r)
	}
	return true
}

// readerBranch picks the reader union branch a non-union writer type
// resolves to: the first of the same type, else the first it promotes to.
func readerBranch(w *Node, ru *Node) int {
	for i, b := range ru.Branches {
		if sameType(w, b) {
			return i
		}
	}
	for i, b := range ru.Branches {
		if promotable(w.Kind, b.Kind) {
			return i
		}
	}
	return -1
}

// unionName is goavro's name for a union branch in native form.
func unionName(n *Node) string {
	if n.Kind.named() {
		return n.Name
	}
	switch n.Logical {
	case "date", "time-millis", "time-micros", "timestamp-millis", "timestamp-micros", "decimal":
		return n.Kind.String() + "." + n.Logical
	}
	return n.Kind.String()
}

func (c *decCompiler) compile(w, r *Node, path string) (decFn, error) {
	if w.Kind == Union {
		return c.writerUnion(w, r, path)
	}
	if r.Kind == Union {
		i := readerBranch(w, r)
		if i < 0 {
			return nil, unresolvable(path, "writer type %s matches no branch of the reader union", w.TypeName())
		}
		br := r.Branches[i]
		fn, err := c.compile(w, br, fmt.Sprintf("%s/%d", path, i))
		if err != nil {
			return nil, err
		}
		if br.Kind == Null {
			return func(r *reader) any { fn(r); return nil }, nil
		}
		name := unionName(br)
		return func(r *reader) any { return map[string]any{name: fn(r)} }, nil
	}
	if w.Kind != r.Kind {
		if promotable(w.Kind, r.Kind) {
			return promote(w.Kind, r), nil
		}
		return nil, unresolvable(path, "writer type %s cannot be read as %s", w.TypeName(), r.TypeName())
	}
	switch w.Kind {
	case Record:
		return c.record(w, r, path)
	case Enum:
		return enumDecoder(w, r, path)
	case Fixed:
		if !namesMatch(w, r) {
			return nil, unresolvable(path, "fixed %q does not match reader fixed %q (names differ)", w.Name, r.Name)
		}
		if w.Size != r.Size {
			return nil, unresolvable(path, "fixed %q has size %d, reader expects %d", w.Name, w.Size, r.Size)
		}
		size := w.Size
		if r.Logical == "decimal" {
			scale := r.Scale
			return func(rd *reader) any { return decimal(rd.next(size), scale) }, nil
		}
		return func(rd *reader) any { return append([]byte(nil), rd.next(size)...) }, nil
	case Array:
		items, err := c.compile(w.Items, r.Items, path+"/items")
		if err != nil {
			return nil, err
		}
		min := minSize(w.Items, 0)
		return func(rd *reader) any {
			out := []any{}
			for {
				n := rd.blockCount(min)
				if n == 0 || rd.err != nil {
					return out
				}
				if out == nil || cap(out)-len(out) < n {
					grown := make([]any, len(out), len(out)+n)
					copy(grown, out)
					out = grown
				}
				for ; n > 0 && rd.err == nil; n-- {
					out = append(out, items(rd))
				}
			}
		}, nil
	case Map:
		values, err := c.compile(w.Values, r.Values, path+"/values")
		if err != nil {
			return nil, err
		}
		min := 1 + minSize(w.Values, 0)
		return func(rd *reader) any {
			out := map[string]any{}
			for {
				n := rd.blockCount(min)
				if n == 0 || rd.err != nil {
					return out
				}
				for ; n > 0 && rd.err == nil; n-- {
					k := rd.string()
					out[k] = values(rd)
				}
			}
		}, nil
	}
	return primitive(r), nil
}

func (c *decCompiler) writerUnion(w, r *Node, path string) (decFn, error) {
	branches := make([]decFn, len(w.Branches))
	ok := 0
	var firstErr error
	for i, wb := range w.Branches {
		fn, err := c.compile(wb, r, fmt.Sprintf("%s/%d", path, i))
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			msg := err
			fn = func(rd *reader) any {
				if rd.err == nil {
					rd.err = msg
				}
				return nil
			}
		} else {
			ok++
		}
		branches[i] = fn
	}
	if ok == 0 && len(w.Branches) > 0 {
		return nil, firstErr
	}
	return func(rd *reader) any {
		i := rd.long()
		if rd.err != nil {
			return nil
		}
		if i < 0 || i >= int64(len(branches)) {
			rd.fail("union branch %d out of range [0, %d)", i, len(branches))
			return nil
		}
		return branches[i](rd)
	}, nil
}

type fieldStep struct {
	name string
	dec  decFn
	skip skipFn
}

type fieldDefault struct {
	name string
	val  func() any
}

func (c *decCompiler) record(w, r *Node, path string) (decFn, error) {
	if !namesMatch(w, r) {
		return nil, unresolvable(path, "record %q does not match reader record %q (names differ)", w.Name, r.Name)
	}
	key := [2]*Node{w, r}
	if p, ok := c.memo[key]; ok {
		return func(rd *reader) any { return (*p)(rd) }, nil
	}
	var self decFn
	c.memo[key] = &self

	steps := make([]fieldStep, len(w.Fields))
	used := make([]bool, len(r.Fields))
	for i, wf := range w.Fields {
		rf := readerField(r, wf)
		if rf == nil {
			steps[i] = fieldStep{skip: compileSkip(wf.Type, map[*Node]*skipFn{})}
			continue
		}
		used[rf.Pos] = true
		fn, err := c.compile(wf.Type, rf.Type, fmt.Sprintf("%s/fields/%d", path, rf.Pos))
		if err != nil {
			return nil, err
		}
		steps[i] = fieldStep{name: rf.Name, dec: fn}
	}
	var defaults []fieldDefault
	for _, rf := range r.Fields {
		if used[rf.Pos] {
			continue
		}
		if !rf.HasDefault {
			return nil, unresolvable(fmt.Sprintf("%s/fields/%d", path, rf.Pos), "reader field %q of record %q is not in the writer schema and has no default", rf.Name, r.Name)
		}
		val, err := defaultFunc(rf.Type, rf.Default)
		if err != nil {
			return nil, unresolvable(fmt.Sprintf("%s/fields/%d", path, rf.Pos), "default of field %q: %v", rf.Name, err)
		}
		defaults = append(defaults, fieldDefault{rf.Name, val})
	}
	n := len(r.Fields)
	self = func(rd *reader) any {
		m := make(map[string]any, n)
		for i := range steps {
			s := &steps[i]
			if s.dec == nil {
				s.skip(rd)
				continue
			}
			m[s.name] = s.dec(rd)
		}
		for _, d := range defaults {
			m[d.name] = d.val()
		}
		return m
	}
	return self, nil
}

// readerField finds the reader field a writer field fills: same name, or a
// reader alias naming it.
func readerField(r *Node, wf *Field) *Field {
	for _, rf := range r.Fields {
		if rf.Name == wf.Name {
			return rf
		}
	}
	for _, rf := range r.Fields {
		for _, a := range rf.Aliases {
			if a == wf.Name {
				return rf
			}
		}
	}
	return nil
}

func enumDecoder(w, r *Node, path string) (decFn, error) {
	if !namesMatch(w, r) {
		return nil, unresolvable(path, "enum %q does not match reader enum %q (names differ)", w.Name, r.Name)
	}
	syms := make([]any, len(w.Symbols)) // boxed once: decoding allocates nothing
	missing := make([]bool, len(w.Symbols))
	for i, s := range w.Symbols {
		switch {
		case hasSym(r, s):
			syms[i] = s
		case r.HasEnumDefault:
			syms[i] = r.EnumDefault
		default:
			missing[i] = true
			syms[i] = s
		}
	}
	name := r.Name
	return func(rd *reader) any {
		i := rd.long()
		if rd.err != nil {
			return nil
		}
		if i < 0 || i >= int64(len(syms)) {
			rd.fail("enum index %d out of range [0, %d)", i, len(syms))
			return nil
		}
		if missing[i] {
			if rd.err == nil {
				rd.err = fmt.Errorf("%w: symbol %q is not in reader enum %q, which has no default", ErrUnresolvable, w.Symbols[i], name)
			}
			return nil
		}
		return syms[i]
	}, nil
}

func hasSym(n *Node, s string) bool {
	_, ok := n.symIndex[s]
	return ok
}

// promote decodes writer kind w as reader r's kind.
func promote(w Kind, r *Node) decFn {
	switch {
	case w == Int && r.Kind == Long:
		return withLogical(r, func(rd *reader) any { return int64(rd.int()) })
	case w == Int && r.Kind == Float:
		return func(rd *reader) any { return float32(rd.int()) }
	case w == Int && r.Kind == Double:
		return func(rd *reader) any { return float64(rd.int()) }
	case w == Long && r.Kind == Float:
		return func(rd *reader) any { return float32(rd.long()) }
	case w == Long && r.Kind == Double:
		return func(rd *reader) any { return float64(rd.long()) }
	case w == Float && r.Kind == Double:
		return func(rd *reader) any { return float64(rd.float()) }
	case w == String && r.Kind == Bytes:
		return withLogical(r, func(rd *reader) any { return rd.bytes() })
	}
	// bytes → string
	return func(rd *reader) any { return rd.string() }
}

func primitive(r *Node) decFn {
	switch r.Kind {
	case Null:
		return func(*reader) any { return nil }
	case Boolean:
		return func(rd *reader) any { return rd.boolean() }
	case Int:
		return withLogical(r, func(rd *reader) any { return rd.int() })
	case Long:
		return withLogical(r, func(rd *reader) any { return rd.long() })
	case Float:
		return func(rd *reader) any { return rd.float() }
	case Double:
		return func(rd *reader) any { return rd.double() }
	case Bytes:
		return withLogical(r, func(rd *reader) any { return rd.bytes() })
	}
	return func(rd *reader) any { return rd.string() }
}

var epoch = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

// withLogical converts the base value to goavro's native form of r's
// logical type.
func withLogical(r *Node, fn decFn) decFn {
	switch r.Logical {
	case "date":
		if r.Kind == Int {
			return func(rd *reader) any { return epoch.AddDate(0, 0, int(rd.int())) }
		}
	case "time-millis":
		if r.Kind == Int {
			return func(rd *reader) any { return time.Duration(rd.int()) * time.Millisecond }
		}
	case "time-micros":
		return func(rd *reader) any { return time.Duration(asLong(fn(rd))) * time.Microsecond }
	case "timestamp-millis":
		return func(rd *reader) any {
			ms := asLong(fn(rd))
			return time.Unix(ms/1e3, (ms%1e3)*1e6).UTC()
		}
	case "timestamp-micros":
		return func(rd *reader) any {
			us := asLong(fn(rd))
			return time.Unix(us/1e6, (us%1e6)*1e3).UTC()
		}
	case "decimal":
		scale := r.Scale
		return func(rd *reader) any {
			b, _ := fn(rd).([]byte)
			return decimal(b, scale)
		}
	}
	return fn
}

func asLong(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	}
	return 0
}

// decimal is a two's-complement big-endian unscaled value over 10^scale.
func decimal(b []byte, scale int) *big.Rat {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(len(b)*8)))
	}
	den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	return new(big.Rat).SetFrac(n, den)
}

// compileSkip returns a function that skips one value of n.
func compileSkip(n *Node, memo map[*Node]*skipFn) skipFn {
	switch n.Kind {
	case Null:
		return func(*reader) {}
	case Boolean:
		return func(r *reader) { r.next(1) }
	case Int, Long, Enum:
		return func(r *reader) { r.long() }
	case Float:
		return func(r *reader) { r.next(4) }
	case Double:
		return func(r *reader) { r.next(8) }
	case Bytes, String:
		return func(r *reader) { r.lenPrefixed() }
	case Fixed:
		size := n.Size
		return func(r *reader) { r.next(size) }
	case Union:
		bs := make([]skipFn, len(n.Branches))
		for i, b := range n.Branches {
			bs[i] = compileSkip(b, memo)
		}
		return func(r *reader) {
			i := r.long()
			if r.err != nil {
				return
			}
			if i < 0 || i >= int64(len(bs)) {
				r.fail("union branch %d out of range [0, %d)", i, len(bs))
				return
			}
			bs[i](r)
		}
	case Array, Map:
		item := n.Items
		min := 0
		if n.Kind == Map {
			item = n.Values
			min = 1
		}
		min += minSize(item, 0)
		isMap := n.Kind == Map
		skipItem := compileSkip(item, memo)
		return func(r *reader) {
			for r.err == nil {
				c := r.long()
				if c == 0 || r.err != nil {
					return
				}
				if c < 0 { // block size in bytes follows: skip it whole
					size := r.long()
					r.next(int(min64(size, int64(len(r.b)+1))))
					continue
				}
				r.pos -= varintLen(c) // reread through blockCount's checks
				cnt := r.blockCount(min)
				for ; cnt > 0 && r.err == nil; cnt-- {
					if isMap {
						r.lenPrefixed()
					}
					skipItem(r)
				}
			}
		}
	}
	// Record
	if p, ok := memo[n]; ok {
		return func(r *reader) { (*p)(r) }
	}
	var self skipFn
	memo[n] = &self
	fs := make([]skipFn, len(n.Fields))
	for i, f := range n.Fields {
		fs[i] = compileSkip(f.Type, memo)
	}
	self = func(r *reader) {
		for _, f := range fs {
			f(r)
		}
	}
	return self
}

func min64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}

func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

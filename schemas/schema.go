package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/linkedin/goavro/v2"
)

// ErrInvalidSchema is wrapped by every error Parse returns.
var ErrInvalidSchema = errors.New("invalid Avro schema")

// Kind is the Avro type of a Node.
type Kind uint8

// The Avro types.
const (
	Null Kind = iota
	Boolean
	Int
	Long
	Float
	Double
	Bytes
	String
	Record
	Enum
	Array
	Map
	Union
	Fixed
)

var kindNames = [...]string{"null", "boolean", "int", "long", "float", "double", "bytes", "string",
	"record", "enum", "array", "map", "union", "fixed"}

// String returns the Avro name of k ("int", "record", ...).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

func (k Kind) primitive() bool { return k <= String }

func (k Kind) named() bool { return k == Record || k == Enum || k == Fixed }

// Node is one type of a parsed schema. Named types (record, enum, fixed)
// appear once; references to them share the pointer, so a recursive
// record's graph has cycles. Nodes are immutable after Parse.
type Node struct {
	Kind Kind
	// Name is the full name of a named type ("ns.Name"), else "".
	Name string
	// Aliases are the full names of a named type's aliases.
	Aliases []string
	// Fields of a record, in order.
	Fields []*Field
	// Symbols of an enum, and its default symbol ("" with HasDefault false
	// when none).
	Symbols        []string
	EnumDefault    string
	HasEnumDefault bool
	// Items of an array, Values of a map.
	Items, Values *Node
	// Branches of a union.
	Branches []*Node
	// Size of a fixed.
	Size int
	// Logical is the logicalType attribute ("" for none) with decimal's
	// precision and scale.
	Logical          string
	Precision, Scale int

	symIndex map[string]int // enum symbol → index
}

// Field is one field of a record.
type Field struct {
	Name    string
	Aliases []string
	Type    *Node
	// Default is the field's default as decoded JSON (json.Number for
	// numbers); HasDefault says whether one was given (a null default is
	// Default == nil with HasDefault true).
	Default    any
	HasDefault bool
	Order      string
	Pos        int
}

// Schema is a parsed, validated Avro schema.
type Schema struct {
	Root *Node

	text      string
	canonical string
	identity  string
	fp        uint64
}

// Text returns the schema text Parse was given.
func (s *Schema) Text() string { return s.text }

// Canonical returns the Avro Parsing Canonical Form.
func (s *Schema) Canonical() string { return s.canonical }

// Fingerprint returns the CRC-64-AVRO (Rabin) fingerprint of the Parsing
// Canonical Form.
func (s *Schema) Fingerprint() uint64 { return s.fp }

// Identity returns the form weir uses to decide that two schema texts are
// the same schema: the Parsing Canonical Form extended with the attributes
// that change what data means or how it resolves (field defaults, aliases,
// enum defaults, field order, logical types). Whitespace, attribute order,
// short versus full names and doc strings do not change it.
func (s *Schema) Identity() string { return s.identity }

// Node returns a Node's full name for named types, else its kind's name.
func (n *Node) TypeName() string {
	if n.Kind.named() {
		return n.Name
	}
	return n.Kind.String()
}

var (
	nameRe     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	primitives = map[string]Kind{"null": Null, "boolean": Boolean, "int": Int, "long": Long,
		"float": Float, "double": Double, "bytes": Bytes, "string": String}
)

// Parse parses and validates an Avro schema (JSON text). Besides weir's own
// checks (names, duplicate fields and symbols, defaults valid for their
// types, unions without nested unions or duplicate branches), the schema
// must also be accepted by goavro, which weir uses for Avro's JSON
// encoding.
func Parse(text string) (*Schema, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the schema JSON", ErrInvalidSchema)
	}
	p := &parser{named: map[string]*Node{}}
	root, err := p.parse(v, "", "")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	for _, d := range p.defaults {
		if err := checkDefault(d.f.Type, d.f.Default); err != nil {
			return nil, fmt.Errorf("%w: %s: default %s: %v", ErrInvalidSchema, d.path, compactJSON(d.f.Default), err)
		}
	}
	if _, err := goavro.NewCodec(text); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	s := &Schema{Root: root, text: text}
	s.canonical = canonicalForm(root, false)
	s.identity = canonicalForm(root, true)
	s.fp = Rabin([]byte(s.canonical))
	return s, nil
}

// MustParse is Parse that panics; for tests and constant schemas.
func MustParse(text string) *Schema {
	s, err := Parse(text)
	if err != nil {
		panic(err)
	}
	return s
}

type pendingDefault struct {
	f    *Field
	path string
}

type parser struct {
	named    map[string]*Node
	defaults []pendingDefault
	depth    int
}

func (p *parser) parse(v any, ns, path string) (*Node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > 256 {
		return nil, fmt.Errorf("%s: schema nested deeper than 256 levels", pathOr(path))
	}
	switch t := v.(type) {
	case string:
		return p.ref(t, ns, path)
	case []any:
		return p.union(t, ns, path)
	case map[string]any:
		return p.object(t, ns, path)
	}
	return nil, fmt.Errorf("%s: want a type name, object or array, got %s", pathOr(path), compactJSON(v))
}

func pathOr(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func (p *parser) ref(name, ns, path string) (*Node, error) {
	if k, ok := primitives[name]; ok {
		return &Node{Kind: k}, nil
	}
	full := fullName(name, ns)
	if n, ok := p.named[full]; ok {
		return n, nil
	}
	if n, ok := p.named[name]; ok {
		return n, nil
	}
	return nil, fmt.Errorf("%s: unknown type %q", pathOr(path), name)
}

func fullName(name, ns string) string {
	if strings.Contains(name, ".") || ns == "" {
		return name
	}
	return ns + "." + name
}

func (p *parser) union(branches []any, ns, path string) (*Node, error) {
	n := &Node{Kind: Union}
	seen := map[string]bool{}
	for i, b := range branches {
		bn, err := p.parse(b, ns, fmt.Sprintf("%s/%d", path, i))
		if err != nil {
			return nil, err
		}
		if bn.Kind == Union {
			return nil, fmt.Errorf("%s/%d: a union may not contain a union", path, i)
		}
		key := bn.TypeName()
		if seen[key] {
			return nil, fmt.Errorf("%s/%d: duplicate union branch %q", path, i, key)
		}
		seen[key] = true
		n.Branches = append(n.Branches, bn)
	}
	return n, nil
}

func str(m map[string]any, k string) (string, bool, error) {
	v, ok := m[k]
	if !ok {
		return "", false, nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", true, fmt.Errorf("%q must be a string, got %s", k, compactJSON(v))
	}
	return s, true, nil
}

func (p *parser) object(m map[string]any, ns, path string) (*Node, error) {
	tv, ok := m["type"]
	if !ok {
		return nil, fmt.Errorf("%s: missing \"type\"", pathOr(path))
	}
	ts, isStr := tv.(string)
	if !isStr {
		// {"type": {...}} or {"type": [...]}: the inner type.
		return p.parse(tv, ns, path+"/type")
	}
	logical, _, err := str(m, "logicalType")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", pathOr(path), err)
	}
	if k, ok := primitives[ts]; ok {
		n := &Node{Kind: k}
		p.logical(n, m, logical)
		return n, nil
	}
	switch ts {
	case "record", "error", "enum", "fixed":
		return p.namedType(ts, m, ns, path, logical)
	case "array":
		items, ok := m["items"]
		if !ok {
			return nil, fmt.Errorf("%s: array without \"items\"", pathOr(path))
		}
		in, err := p.parse(items, ns, path+"/items")
		if err != nil {
			return nil, err
		}
		return &Node{Kind: Array, Items: in}, nil
	case "map":
		values, ok := m["values"]
		if !ok {
			return nil, fmt.Errorf("%s: map without \"values\"", pathOr(path))
		}
		vn, err := p.parse(values, ns, path+"/values")
		if err != nil {
			return nil, err
		}
		return &Node{Kind: Map, Values: vn}, nil
	}
	// {"type": "SomeNamedType"}
	return p.ref(ts, ns, path)
}

// logical records a logical type that is valid for n, and ignores one that
// is not, as the Avro spec asks.
func (p *parser) logical(n *Node, m map[string]any, lt string) {
	ok := false
	switch lt {
	case "date", "time-millis":
		ok = n.Kind == Int
	case "time-micros", "timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros":
		ok = n.Kind == Long
	case "uuid":
		ok = n.Kind == String
	case "decimal":
		if n.Kind == Bytes || n.Kind == Fixed {
			prec, _ := intAttr(m, "precision")
			scale, _ := intAttr(m, "scale")
			ok = prec > 0 && scale >= 0 && scale <= prec
			if ok && n.Kind == Fixed {
				ok = prec <= maxFixedPrecision(n.Size)
			}
			if ok {
				n.Precision, n.Scale = prec, scale
			}
		}
	}
	if ok {
		n.Logical = lt
	}
}

func maxFixedPrecision(size int) int {
	// floor(log10(2^(8*size-1) - 1))
	if size <= 0 {
		return 0
	}
	bits := 8*size - 1
	return int(float64(bits) * 0.30102999566398)
}

func intAttr(m map[string]any, k string) (int, bool) {
	v, ok := m[k]
	if !ok {
		return 0, false
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, false
	}
	i, err := n.Int64()
	if err != nil || i < 0 || i > 1<<30 {
		return 0, false
	}
	return int(i), true
}

func (p *parser) namedType(ts string, m map[string]any, ns, path, logical string) (*Node, error) {
	name, ok, err := str(m, "name")
	if err == nil && !ok {
		err = fmt.Errorf("%s without \"name\"", ts)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", pathOr(path), err)
	}
	explicitNS, hasNS, err := str(m, "namespace")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", pathOr(path), err)
	}
	if hasNS {
		ns = explicitNS
	}
	full := fullName(name, ns)
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		ns = full[:i]
	} else {
		ns = ""
	}
	if err := validFullName(full); err != nil {
		return nil, fmt.Errorf("%s: %s name %q: %v", pathOr(path), ts, full, err)
	}
	if _, isPrim := primitives[shortName(full)]; isPrim && !strings.Contains(full, ".") {
		return nil, fmt.Errorf("%s: %s name %q redefines a primitive type", pathOr(path), ts, full)
	}
	if _, dup := p.named[full]; dup {
		return nil, fmt.Errorf("%s: type %q defined twice", pathOr(path), full)
	}
	n := &Node{Name: full}
	if n.Aliases, err = aliases(m, ns, path); err != nil {
		return nil, err
	}
	p.named[full] = n
	switch ts {
	case "record", "error":
		n.Kind = Record
		return n, p.fields(n, m, ns, path)
	case "enum":
		n.Kind = Enum
		return n, p.enum(n, m, path)
	default:
		n.Kind = Fixed
		size, ok := intAttr(m, "size")
		if !ok {
			return nil, fmt.Errorf("%s: fixed %q needs a non-negative integer \"size\"", pathOr(path), full)
		}
		n.Size = size
		p.logical(n, m, logical)
		return n, nil
	}
}

func shortName(full string) string {
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		return full[i+1:]
	}
	return full
}

func validFullName(full string) error {
	for _, part := range strings.Split(full, ".") {
		if !nameRe.MatchString(part) {
			return fmt.Errorf("%q is not a valid name part ([A-Za-z_][A-Za-z0-9_]*)", part)
		}
	}
	return nil
}

func aliases(m map[string]any, ns, path string) ([]string, error) {
	v, ok := m["aliases"]
	if !ok {
		return nil, nil
	}
	list, isList := v.([]any)
	if !isList {
		return nil, fmt.Errorf("%s: \"aliases\" must be an array of strings", pathOr(path))
	}
	var out []string
	for _, a := range list {
		s, isStr := a.(string)
		if !isStr {
			return nil, fmt.Errorf("%s: \"aliases\" must be an array of strings", pathOr(path))
		}
		full := fullName(s, ns)
		if err := validFullName(full); err != nil {
			return nil, fmt.Errorf("%s: alias %q: %v", pathOr(path), s, err)
		}
		out = append(out, full)
	}
	return out, nil
}

func (p *parser) fields(n *Node, m map[string]any, ns, path string) error {
	fv, ok := m["fields"]
	if !ok {
		return fmt.Errorf("%s: record %q without \"fields\"", pathOr(path), n.Name)
	}
	list, isList := fv.([]any)
	if !isList {
		return fmt.Errorf("%s: record %q: \"fields\" must be an array", pathOr(path), n.Name)
	}
	seen := map[string]bool{}
	for i, raw := range list {
		fpath := fmt.Sprintf("%s/fields/%d", path, i)
		fm, isObj := raw.(map[string]any)
		if !isObj {
			return fmt.Errorf("%s: field must be an object", fpath)
		}
		name, ok, err := str(fm, "name")
		if err == nil && !ok {
			err = errors.New("field without \"name\"")
		}
		if err != nil {
			return fmt.Errorf("%s: %v", fpath, err)
		}
		if !nameRe.MatchString(name) {
			return fmt.Errorf("%s: field name %q is not a valid name ([A-Za-z_][A-Za-z0-9_]*)", fpath, name)
		}
		if seen[name] {
			return fmt.Errorf("%s: record %q has two fields named %q", fpath, n.Name, name)
		}
		seen[name] = true
		tv, ok := fm["type"]
		if !ok {
			return fmt.Errorf("%s: field %q without \"type\"", fpath, name)
		}
		ft, err := p.parse(tv, ns, fpath+"/type")
		if err != nil {
			return err
		}
		f := &Field{Name: name, Type: ft, Pos: i, Order: "ascending"}
		if o, ok, err := str(fm, "order"); err != nil {
			return fmt.Errorf("%s: %v", fpath, err)
		} else if ok {
			if o != "ascending" && o != "descending" && o != "ignore" {
				return fmt.Errorf("%s: field %q: order %q: want ascending, descending or ignore", fpath, name, o)
			}
			f.Order = o
		}
		if av, ok := fm["aliases"]; ok {
			al, isList := av.([]any)
			if !isList {
				return fmt.Errorf("%s: field %q: \"aliases\" must be an array of strings", fpath, name)
			}
			for _, a := range al {
				s, isStr := a.(string)
				if !isStr || !nameRe.MatchString(s) {
					return fmt.Errorf("%s: field %q: alias %s is not a valid name", fpath, name, compactJSON(a))
				}
				f.Aliases = append(f.Aliases, s)
			}
		}
		if d, ok := fm["default"]; ok {
			f.Default, f.HasDefault = d, true
			p.defaults = append(p.defaults, pendingDefault{f, fmt.Sprintf("%s (field %q)", fpath, name)})
		}
		n.Fields = append(n.Fields, f)
	}
	return nil
}

func (p *parser) enum(n *Node, m map[string]any, path string) error {
	sv, ok := m["symbols"]
	list, isList := sv.([]any)
	if !ok || !isList {
		return fmt.Errorf("%s: enum %q needs a \"symbols\" array", pathOr(path), n.Name)
	}
	n.symIndex = make(map[string]int, len(list))
	for _, s := range list {
		sym, isStr := s.(string)
		if !isStr || !nameRe.MatchString(sym) {
			return fmt.Errorf("%s: enum %q: symbol %s is not a valid name", pathOr(path), n.Name, compactJSON(s))
		}
		if _, dup := n.symIndex[sym]; dup {
			return fmt.Errorf("%s: enum %q: duplicate symbol %q", pathOr(path), n.Name, sym)
		}
		n.symIndex[sym] = len(n.Symbols)
		n.Symbols = append(n.Symbols, sym)
	}
	if d, ok, err := str(m, "default"); err != nil {
		return fmt.Errorf("%s: enum %q: %v", pathOr(path), n.Name, err)
	} else if ok {
		if _, known := n.symIndex[d]; !known {
			return fmt.Errorf("%s: enum %q: default %q is not one of its symbols", pathOr(path), n.Name, d)
		}
		n.EnumDefault, n.HasEnumDefault = d, true
	}
	return nil
}

// checkDefault reports whether the JSON value d is a valid default for n
// (for a union: for its first branch).
func checkDefault(n *Node, d any) error {
	return checkDefaultDepth(n, d, 0)
}

func checkDefaultDepth(n *Node, d any, depth int) error {
	if depth > 256 {
		return errors.New("default nested too deeply")
	}
	bad := func() error { return fmt.Errorf("not a valid %s", n.TypeName()) }
	switch n.Kind {
	case Null:
		if d != nil {
			return bad()
		}
	case Boolean:
		if _, ok := d.(bool); !ok {
			return bad()
		}
	case Int, Long:
		num, ok := d.(json.Number)
		if !ok {
			return bad()
		}
		i, err := num.Int64()
		if err != nil || (n.Kind == Int && (i < -1<<31 || i > 1<<31-1)) {
			return bad()
		}
	case Float, Double:
		num, ok := d.(json.Number)
		if !ok {
			if s, isStr := d.(string); isStr && (s == "NaN" || s == "Infinity" || s == "-Infinity") {
				return nil
			}
			return bad()
		}
		if _, err := num.Float64(); err != nil {
			return bad()
		}
	case Bytes, String, Fixed:
		s, ok := d.(string)
		if !ok {
			return bad()
		}
		if n.Kind == Fixed && len([]rune(s)) != n.Size {
			return fmt.Errorf("fixed %q needs %d bytes", n.Name, n.Size)
		}
	case Enum:
		s, ok := d.(string)
		if !ok {
			return bad()
		}
		if _, known := n.symIndex[s]; !known {
			return fmt.Errorf("%q is not a symbol of enum %q", s, n.Name)
		}
	case Array:
		list, ok := d.([]any)
		if !ok {
			return bad()
		}
		for _, it := range list {
			if err := checkDefaultDepth(n.Items, it, depth+1); err != nil {
				return err
			}
		}
	case Map:
		m, ok := d.(map[string]any)
		if !ok {
			return bad()
		}
		for _, it := range m {
			if err := checkDefaultDepth(n.Values, it, depth+1); err != nil {
				return err
			}
		}
	case Union:
		if len(n.Branches) == 0 {
			return errors.New("an empty union has no valid default")
		}
		return checkDefaultDepth(n.Branches[0], d, depth+1)
	case Record:
		m, ok := d.(map[string]any)
		if !ok {
			return bad()
		}
		for _, f := range n.Fields {
			v, ok := m[f.Name]
			if !ok {
				if !f.HasDefault {
					return fmt.Errorf("record %q default lacks field %q", n.Name, f.Name)
				}
				continue
			}
			if err := checkDefaultDepth(f.Type, v, depth+1); err != nil {
				return fmt.Errorf("field %q: %v", f.Name, err)
			}
		}
	}
	return nil
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

// canonicalForm writes the Parsing Canonical Form of n; with identity it
// also keeps the attributes listed on Schema.Identity.
func canonicalForm(n *Node, identity bool) string {
	var b bytes.Buffer
	c := canon{b: &b, identity: identity, seen: map[*Node]bool{}}
	c.node(n)
	return b.String()
}

type canon struct {
	b        *bytes.Buffer
	identity bool
	seen     map[*Node]bool
}

func (c *canon) str(s string) {
	e, _ := json.Marshal(s)
	c.b.Write(e)
}

func (c *canon) node(n *Node) {
	b := c.b
	logical := c.identity && n.Logical != ""
	if n.Kind.primitive() && !logical {
		c.str(n.Kind.String())
		return
	}
	if n.Kind.named() {
		if c.seen[n] {
			c.str(n.Name)
			return
		}
		c.seen[n] = true
	}
	switch n.Kind {
	case Union:
		b.WriteByte('[')
		for i, br := range n.Branches {
			if i > 0 {
				b.WriteByte(',')
			}
			c.node(br)
		}
		b.WriteByte(']')
		return
	case Array:
		b.WriteString(`{"type":"array","items":`)
		c.node(n.Items)
	case Map:
		b.WriteString(`{"type":"map","values":`)
		c.node(n.Values)
	case Record:
		b.WriteString(`{"name":`)
		c.str(n.Name)
		b.WriteString(`,"type":"record","fields":[`)
		for i, f := range n.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"name":`)
			c.str(f.Name)
			b.WriteString(`,"type":`)
			c.node(f.Type)
			if c.identity {
				if f.HasDefault {
					b.WriteString(`,"default":`)
					b.WriteString(normalJSON(f.Default))
				}
				if len(f.Aliases) > 0 {
					b.WriteString(`,"aliases":`)
					b.WriteString(normalJSON(sortedCopy(f.Aliases)))
				}
				if f.Order != "ascending" {
					b.WriteString(`,"order":`)
					c.str(f.Order)
				}
			}
			b.WriteByte('}')
		}
		b.WriteByte(']')
	case Enum:
		b.WriteString(`{"name":`)
		c.str(n.Name)
		b.WriteString(`,"type":"enum","symbols":`)
		b.WriteString(normalJSON(n.Symbols))
		if c.identity && n.HasEnumDefault {
			b.WriteString(`,"default":`)
			c.str(n.EnumDefault)
		}
	case Fixed:
		b.WriteString(`{"name":`)
		c.str(n.Name)
		fmt.Fprintf(b, `,"type":"fixed","size":%d`, n.Size)
	default: // primitive with a logical type (identity only)
		b.WriteString(`{"type":`)
		c.str(n.Kind.String())
	}
	if c.identity {
		if n.Kind.named() && len(n.Aliases) > 0 {
			b.WriteString(`,"aliases":`)
			b.WriteString(normalJSON(sortedCopy(n.Aliases)))
		}
		if n.Logical != "" {
			b.WriteString(`,"logicalType":`)
			c.str(n.Logical)
			if n.Logical == "decimal" {
				fmt.Fprintf(b, `,"precision":%d,"scale":%d`, n.Precision, n.Scale)
			}
		}
	}
	b.WriteByte('}')
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	sort.Strings(c)
	return c
}

// normalJSON encodes a decoded JSON value with sorted object keys and no
// whitespace (encoding/json sorts map keys).
func normalJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

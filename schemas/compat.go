package schemas

import (
	"errors"
	"fmt"
	"strings"
)

// Level is a compatibility level, with Confluent Schema Registry's names.
type Level string

// The compatibility levels. BACKWARD: the new schema reads data written
// with the latest one; FORWARD: the latest reads data written with the new
// one; FULL: both. The _TRANSITIVE forms check every earlier version, not
// only the latest. NONE checks nothing.
const (
	LevelBackward           Level = "BACKWARD"
	LevelBackwardTransitive Level = "BACKWARD_TRANSITIVE"
	LevelForward            Level = "FORWARD"
	LevelForwardTransitive  Level = "FORWARD_TRANSITIVE"
	LevelFull               Level = "FULL"
	LevelFullTransitive     Level = "FULL_TRANSITIVE"
	LevelNone               Level = "NONE"
	// DefaultLevel is the registry's default, as in Confluent's.
	DefaultLevel = LevelBackward
)

// ErrInvalidLevel is wrapped by ParseLevel's errors.
var ErrInvalidLevel = errors.New("invalid compatibility level")

var levels = []Level{LevelBackward, LevelBackwardTransitive, LevelForward, LevelForwardTransitive, LevelFull, LevelFullTransitive, LevelNone}

// ParseLevel parses a level name (case-insensitive).
func ParseLevel(s string) (Level, error) {
	u := Level(strings.ToUpper(strings.TrimSpace(s)))
	for _, l := range levels {
		if u == l {
			return l, nil
		}
	}
	names := make([]string, len(levels))
	for i, l := range levels {
		names[i] = string(l)
	}
	return "", fmt.Errorf("%w %q: want one of %s", ErrInvalidLevel, s, strings.Join(names, ", "))
}

// Transitive reports whether l checks every earlier version.
func (l Level) Transitive() bool { return strings.HasSuffix(string(l), "_TRANSITIVE") }

func (l Level) backward() bool { return strings.HasPrefix(string(l), "BACKWARD") || l.full() }
func (l Level) forward() bool  { return strings.HasPrefix(string(l), "FORWARD") || l.full() }
func (l Level) full() bool     { return strings.HasPrefix(string(l), "FULL") }

// The incompatibility types, named as Avro's SchemaCompatibility and
// Confluent Schema Registry name them.
const (
	NameMismatch                   = "NAME_MISMATCH"
	FixedSizeMismatch              = "FIXED_SIZE_MISMATCH"
	MissingEnumSymbols             = "MISSING_ENUM_SYMBOLS"
	ReaderFieldMissingDefaultValue = "READER_FIELD_MISSING_DEFAULT_VALUE"
	TypeMismatch                   = "TYPE_MISMATCH"
	MissingUnionBranch             = "MISSING_UNION_BRANCH"
)

// Incompatibility is one reason a reader schema cannot read data written
// with a writer schema.
type Incompatibility struct {
	// Type is one of the constants above (TYPE_MISMATCH, ...).
	Type string
	// Path is the JSON-pointer-like location in the reader schema
	// ("/fields/2", "/fields/0/type/items").
	Path string
	// Description says what is wrong, in Confluent's words.
	Description string
	// Info is the thing at fault (field name, missing symbols, types).
	Info string
	// Against is the index, in the list given to Check, of the earlier
	// schema the candidate conflicts with (-1 from CheckReader).
	Against int
	// Direction is "BACKWARD" (the new schema reads the old one's data) or
	// "FORWARD" (the old schema reads the new one's data).
	Direction string
}

// String formats i as Confluent's verbose compatibility messages do.
func (i Incompatibility) String() string {
	return fmt.Sprintf("{errorType:'%s', description:'%s', additionalInfo:'%s'}", i.Type, i.Description, i.Info)
}

// Check returns why candidate is not compatible with previous (the
// subject's earlier schemas, oldest first) under level; none means it is.
func Check(level Level, candidate *Schema, previous []*Schema) []Incompatibility {
	if level == LevelNone || len(previous) == 0 {
		return nil
	}
	against := previous
	first := 0
	if !level.Transitive() {
		first = len(previous) - 1
		against = previous[first:]
	}
	var out []Incompatibility
	for j := len(against) - 1; j >= 0; j-- {
		old := against[j]
		if level.backward() {
			for _, inc := range checkReader(candidate.Root, old.Root, "new", "old") {
				inc.Against, inc.Direction = first+j, "BACKWARD"
				out = append(out, inc)
			}
		}
		if level.forward() {
			for _, inc := range checkReader(old.Root, candidate.Root, "old", "new") {
				inc.Against, inc.Direction = first+j, "FORWARD"
				out = append(out, inc)
			}
		}
	}
	return out
}

// CheckReader returns why reader cannot read every datum written with
// writer (the Avro spec's resolution rules, all of them, including writer
// union branches the reader cannot take).
func CheckReader(reader, writer *Schema) []Incompatibility {
	out := checkReader(reader.Root, writer.Root, "reader", "writer")
	for i := range out {
		out[i].Against = -1
	}
	return out
}

func checkReader(r, w *Node, rl, wl string) []Incompatibility {
	c := &checker{rl: rl, wl: wl, seen: map[[2]*Node]bool{}}
	c.check(r, w, "")
	return c.out
}

type checker struct {
	rl, wl string // "new"/"old" labels for the reader and writer
	seen   map[[2]*Node]bool
	out    []Incompatibility
}

func (c *checker) add(typ, path, info, desc string) {
	c.out = append(c.out, Incompatibility{Type: typ, Path: pathOr(path), Info: info, Description: desc})
}

func (c *checker) typeMismatch(r, w *Node, path string) {
	c.add(TypeMismatch, path, fmt.Sprintf("%s schema: %s, %s schema: %s", c.rl, r.TypeName(), c.wl, w.TypeName()),
		fmt.Sprintf("The type (path '%s') of a field in the %s schema does not match with the %s schema", pathOr(path), c.rl, c.wl))
}

// compatible runs a nested check and reports whether it found nothing,
// without recording what it found.
func (c *checker) compatible(r, w *Node, path string) bool {
	sub := &checker{rl: c.rl, wl: c.wl, seen: c.seen}
	sub.check(r, w, path)
	return len(sub.out) == 0
}

func (c *checker) check(r, w *Node, path string) {
	if r.Kind.named() && w.Kind.named() {
		key := [2]*Node{r, w}
		if c.seen[key] {
			return // in progress higher up: assume compatible (recursion)
		}
		c.seen[key] = true
		defer delete(c.seen, key)
	}
	if w.Kind == Union && r.Kind != Union {
		for i, wb := range w.Branches {
			if !c.compatible(r, wb, path) {
				c.add(MissingUnionBranch, fmt.Sprintf("%s/%d", path, i), fmt.Sprintf("%s schema: %s, %s schema: %s", c.rl, r.TypeName(), c.wl, wb.TypeName()),
					fmt.Sprintf("The %s schema is missing a type inside a union field at path '%s/%d' in the %s schema", c.rl, pathOr(path), i, c.wl))
			}
		}
		return
	}
	if r.Kind == w.Kind {
		switch r.Kind {
		case Array:
			c.check(r.Items, w.Items, path+"/items")
		case Map:
			c.check(r.Values, w.Values, path+"/values")
		case Fixed:
			if !namesMatch(w, r) {
				c.nameMismatch(r, w, path)
				return
			}
			if r.Size != w.Size {
				c.add(FixedSizeMismatch, path+"/size", fmt.Sprintf("expected: %d, found: %d", w.Size, r.Size),
					fmt.Sprintf("The size of FIXED type field at path '%s/size' in the %s schema does not match with the %s schema", pathOr(path), c.rl, c.wl))
			}
		case Enum:
			if !namesMatch(w, r) {
				c.nameMismatch(r, w, path)
				return
			}
			if r.HasEnumDefault {
				return
			}
			var missing []string
			for _, s := range w.Symbols {
				if !hasSym(r, s) {
					missing = append(missing, s)
				}
			}
			if len(missing) > 0 {
				c.add(MissingEnumSymbols, path+"/symbols", "["+strings.Join(missing, ", ")+"]",
					fmt.Sprintf("The %s schema is missing enum symbols '[%s]' at path '%s/symbols' in the %s schema", c.rl, strings.Join(missing, ", "), pathOr(path), c.wl))
			}
		case Record:
			if !namesMatch(w, r) {
				c.nameMismatch(r, w, path)
				return
			}
			for _, rf := range r.Fields {
				fpath := fmt.Sprintf("%s/fields/%d", path, rf.Pos)
				wf := writerField(w, rf)
				if wf == nil {
					if !rf.HasDefault {
						c.add(ReaderFieldMissingDefaultValue, fpath, rf.Name,
							fmt.Sprintf("The field '%s' at path '%s' in the %s schema has no default value and is missing in the %s schema", rf.Name, fpath, c.rl, c.wl))
					}
					continue
				}
				c.check(rf.Type, wf.Type, fpath+"/type")
			}
		case Union:
			for i, wb := range w.Branches {
				if !c.compatible(r, wb, path) {
					c.add(MissingUnionBranch, fmt.Sprintf("%s/%d", path, i), fmt.Sprintf("%s schema: %s, %s schema: %s", c.rl, unionString(r), c.wl, wb.TypeName()),
						fmt.Sprintf("The %s schema is missing a type inside a union field at path '%s/%d' in the %s schema", c.rl, pathOr(path), i, c.wl))
				}
			}
		}
		return
	}
	if r.Kind == Union {
		for i, rb := range r.Branches {
			if c.compatible(rb, w, fmt.Sprintf("%s/%d", path, i)) {
				return
			}
		}
		c.typeMismatch(r, w, path)
		return
	}
	if promotable(w.Kind, r.Kind) {
		return
	}
	c.typeMismatch(r, w, path)
}

func unionString(n *Node) string {
	return "[" + strings.Join(unionNames(n), ", ") + "]"
}

func (c *checker) nameMismatch(r, w *Node, path string) {
	c.add(NameMismatch, path+"/name", fmt.Sprintf("expected: %s", w.Name),
		fmt.Sprintf("The name of the schema has changed (path '%s/name'): %s schema has %q, %s schema has %q", pathOr(path), c.rl, r.Name, c.wl, w.Name))
}

// writerField finds the writer field that fills reader field rf: same
// name, or named by one of rf's aliases.
func writerField(w *Node, rf *Field) *Field {
	for _, wf := range w.Fields {
		if wf.Name == rf.Name {
			return wf
		}
	}
	for _, a := range rf.Aliases {
		for _, wf := range w.Fields {
			if wf.Name == a {
				return wf
			}
		}
	}
	return nil
}

package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"weir/connectors"
	"weir/pipelines"
)

func init() {
	registerCommand(func(*globalFlags) *cobra.Command {
		var all, markdown bool
		cmd := &cobra.Command{
			Use:   "kinds [NAME...]",
			Short: "List the source, sink and transform step kinds (and the test block), or print their reference (settings, types, defaults)",
			Long: `Without arguments, kinds lists every source, sink and transform step kind
that pipeline files can use, with one line of description each. With names
(or --all), it prints their reference: every setting with its type, default,
accepted values and description, the nested blocks, and for sources and
sinks the settings the pipeline adds (topic, transforms; from, group, ...).
The reference comes from the specs the kinds declare, the same ones that
check pipeline files.`,
			Example: `  weir kinds
  weir kinds mysql parse_timestamp
  weir kinds --all --markdown > kinds.md`,
			RunE: func(cmd *cobra.Command, args []string) error {
				refs := kindRefs()
				if len(args) == 0 && !all {
					listKinds(cmd.OutOrStdout(), refs)
					return nil
				}
				var sel []kindRef
				if all {
					sel = refs
				}
				for _, a := range args {
					n := len(sel)
					for _, r := range refs {
						if r.Name == a {
							sel = append(sel, r)
						}
					}
					if len(sel) == n {
						var names []string
						for _, r := range refs {
							names = append(names, r.Name)
						}
						return fmt.Errorf("no kind named %q (known: %s)", a, strings.Join(uniq(names), ", "))
					}
				}
				w := cmd.OutOrStdout()
				for i, r := range sel {
					if i > 0 {
						fmt.Fprintln(w)
					}
					if markdown {
						r.writeMarkdown(w)
					} else {
						r.writeText(w)
					}
				}
				return nil
			},
		}
		cmd.Flags().BoolVar(&all, "all", false, "print the reference of every kind")
		cmd.Flags().BoolVar(&markdown, "markdown", false, "print the reference as Markdown")
		return cmd
	})
}

// kindRef is what the reference of one kind shows: connector kinds and
// step kinds alike, from their specs.
type kindRef struct {
	Type string // "source", "sink" or "step"
	Name string // the block label (source "file") or type (step "set")
	Doc  string
	Spec connectors.Spec
	// Free documents a step whose attributes the user names (set).
	Free *connectors.Field
	// Meta are the pipeline's own settings of the block.
	Meta []connectors.Field
}

// kindRefs returns every kind weir knows: sources, sinks, then steps,
// each by name.
func kindRefs() []kindRef {
	var out []kindRef
	for _, typ := range []string{"source", "sink"} {
		var refs []kindRef
		for _, k := range connectors.Default.Kinds() {
			if k.IsSource() == (typ == "source") {
				refs = append(refs, kindRef{Type: typ, Name: strings.TrimSuffix(k.Name, "-"+typ), Doc: k.Doc, Spec: k.Spec, Meta: pipelines.MetaSettings(typ)})
			}
		}
		sort.Slice(refs, func(i, j int) bool { return refs[i].Name < refs[j].Name })
		out = append(out, refs...)
	}
	for _, k := range pipelines.StepKinds() {
		out = append(out, kindRef{Type: "step", Name: k.Name, Doc: k.Doc, Spec: k.Spec, Free: k.Free})
	}
	// The test block (weir test) is not a kind, but its reference is
	// printed alike.
	out = append(out, kindRef{Type: "block", Name: "test", Doc: pipelines.TestBlockDoc,
		Spec: connectors.Spec{Fields: pipelines.TestBlockFields, Blocks: pipelines.TestBlockBlocks}})
	return out
}

func listKinds(w io.Writer, refs []kindRef) {
	width := 0
	for _, r := range refs {
		width = max(width, len(r.Type)+1+len(r.Name))
	}
	for _, r := range refs {
		fmt.Fprintf(w, "%-*s  %s\n", width, r.Type+" "+r.Name, firstSentence(r.Doc))
	}
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

func uniq(names []string) []string {
	sort.Strings(names)
	out := names[:0]
	for i, n := range names {
		if i == 0 || n != names[i-1] {
			out = append(out, n)
		}
	}
	return out
}

func (r kindRef) title() string {
	switch r.Type {
	case "step":
		return "step " + r.Name + " { ... }"
	case "block":
		return r.Name + " \"<name>\" { ... }"
	}
	return fmt.Sprintf("%s %q \"<name>\" { ... }", r.Type, r.Name)
}

func (r kindRef) writeText(w io.Writer) {
	fmt.Fprintln(w, r.title())
	wrap(w, "  ", r.Doc)
	section := func(title string, fs []connectors.Field, indent string) {
		if len(fs) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s%s:\n", indent, title)
		for _, f := range fs {
			fmt.Fprintf(w, "%s  %s  %s\n", indent, f.Name, fieldFacts(f))
			wrap(w, indent+"      ", f.Doc)
		}
	}
	if r.Free != nil {
		section("Attributes (any number)", []connectors.Field{*r.Free}, "  ")
	}
	section("Settings", r.settings(), "  ")
	for _, b := range r.Spec.Blocks {
		if b.Label == "" {
			fmt.Fprintf(w, "\n  Block %s { ... } (any number, in order):\n", b.Type)
		} else {
			fmt.Fprintf(w, "\n  Block %s %q { ... } (any number, each label once):\n", b.Type, "<"+b.Label+">")
		}
		wrap(w, "    ", b.Doc)
		section("Settings of "+b.Type, b.Fields, "    ")
	}
	section("Pipeline settings", r.Meta, "  ")
	if r.Type == "source" {
		fmt.Fprintln(w)
		wrap(w, "  ", "Transform step blocks, any number, run in order over each record (weir kinds <step>): "+strings.Join(stepNames(), ", ")+".")
	}
}

// settings are the kind's own settings, less those the pipeline fills
// in from its own (a source's topic).
func (r kindRef) settings() []connectors.Field {
	var out []connectors.Field
	for _, f := range r.Spec.Fields {
		if !slices.ContainsFunc(r.Meta, func(m connectors.Field) bool { return m.Name == f.Name }) {
			out = append(out, f)
		}
	}
	return out
}

func stepNames() []string {
	var out []string
	for _, k := range pipelines.StepKinds() {
		out = append(out, k.Name)
	}
	return out
}

func (r kindRef) writeMarkdown(w io.Writer) {
	fmt.Fprintf(w, "## %s `%s`\n\n%s\n", r.Type, r.Name, mdText(r.Doc))
	table := func(title string, fs []connectors.Field) {
		if len(fs) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s\n\n| setting | type | default | description |\n|---|---|---|---|\n", title)
		for _, f := range fs {
			def := ""
			switch {
			case f.Required:
				def = "required"
			case f.Default != nil:
				def = "`" + formatDefault(f.Default) + "`"
			}
			doc := f.Doc
			if len(f.Enum) > 0 {
				doc += " (one of: " + strings.Join(f.Enum, ", ") + ")"
			}
			fmt.Fprintf(w, "| `%s` | %s | %s | %s |\n", f.Name, f.Type, def, mdText(doc))
		}
	}
	if r.Free != nil {
		table("Attributes (any number):", []connectors.Field{*r.Free})
	}
	table("Settings:", r.settings())
	for _, b := range r.Spec.Blocks {
		if b.Label == "" {
			fmt.Fprintf(w, "\n### block `%s` (any number, in order)\n\n%s\n", b.Type, mdText(b.Doc))
		} else {
			fmt.Fprintf(w, "\n### block `%s \"<%s>\"` (any number, each label once)\n\n%s\n", b.Type, b.Label, mdText(b.Doc))
		}
		table("Settings:", b.Fields)
	}
	table("Pipeline settings:", r.Meta)
	if r.Type == "source" {
		fmt.Fprintf(w, "\nTransform step blocks, any number, run in order over each record: %s.\n", strings.Join(stepNames(), ", "))
	}
}

func mdText(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "\n", " ").Replace(s)
}

// fieldFacts is a field's type, then required, its default or its
// accepted values.
func fieldFacts(f connectors.Field) string {
	parts := []string{f.Type.String()}
	if f.Required {
		parts = append(parts, "required")
	} else if f.Default != nil {
		parts = append(parts, "default "+formatDefault(f.Default))
	}
	if len(f.Enum) > 0 {
		parts = append(parts, "one of: "+strings.Join(f.Enum, ", "))
	}
	return "(" + strings.Join(parts, "; ") + ")"
}

// formatDefault writes a default value as it would be written in HCL.
func formatDefault(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case time.Duration:
		return strconv.Quote(x.String())
	case []string:
		q := make([]string, len(x))
		for i, s := range x {
			q[i] = strconv.Quote(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	case []any:
		q := make([]string, len(x))
		for i, e := range x {
			q[i] = formatDefault(e)
		}
		return "[" + strings.Join(q, ", ") + "]"
	case map[string]string:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		q := make([]string, len(keys))
		for i, k := range keys {
			q[i] = fmt.Sprintf("%s = %q", k, x[k])
		}
		return "{ " + strings.Join(q, ", ") + " }"
	}
	return fmt.Sprint(v)
}

// wrap writes s in lines of at most 80 columns after indent.
func wrap(w io.Writer, indent, s string) {
	line := indent
	for _, word := range strings.Fields(s) {
		if len(line) > len(indent) && len(line)+1+len(word) > 80 {
			fmt.Fprintln(w, line)
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	if len(line) > len(indent) {
		fmt.Fprintln(w, line)
	}
}

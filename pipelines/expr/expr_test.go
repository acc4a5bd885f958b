package expr_test

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"weir/pipelines/expr"
)

// testRecord is the record every test expression reads.
func testRecord() *expr.Object {
	user := &expr.Object{}
	user.Set("name", "ann")
	user.Set("id", int64(7))
	rec := &expr.Object{}
	rec.Set("message", "GET /index.html 200")
	rec.Set("status", int64(200))
	rec.Set("ms", 12.5)
	rec.Set("tags", []any{"a", "b", "c"})
	rec.Set("user", user)
	rec.Set("empty", nil)
	rec.Set("ok", true)
	return rec
}

func compile(t testing.TB, src string) (expr.Fn, hcl.Diagnostics) {
	t.Helper()
	e, diags := hclsyntax.ParseExpression([]byte(src), "test.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", src, diags.Error())
	}
	c := &expr.Compiler{Ctx: &hcl.EvalContext{Functions: expr.Functions("testdata")}}
	return c.Compile(e)
}

// hclValue evaluates src with HCL's own evaluator over a cty copy of
// rec: the reference the compiled form must agree with.
func hclValue(t *testing.T, src string, rec *expr.Object) (any, bool) {
	e, _ := hclsyntax.ParseExpression([]byte(src), "test.hcl", hcl.InitialPos)
	ctx := &hcl.EvalContext{Functions: expr.Functions("testdata"),
		Variables: map[string]cty.Value{expr.RecordVar: expr.ToCty(rec)}}
	v, diags := e.Value(ctx)
	if diags.HasErrors() {
		return nil, false
	}
	return expr.FromCty(v), true
}

func TestCompiledAgreesWithHCL(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		`record.status + 1`, `record.ms * 2`, `record.status / 8`, `record.status % 7`, `-record.ms`,
		`record.status == 200`, `record.status != 200`, `record.ms < 13`, `record.status >= 500`,
		`record.ok && record.status > 100`, `!record.ok || false`,
		`record.status - 1`, `record.ms > 13`, `record.ms <= 13`, `record.ms <= 12.5`, `record.status > 200`,
		`record.status < 200`, `!record.ok && record.ok`, `record.ok || !record.ok`, `false || record.ok`,
		`record.status >= 500 ? "error" : "ok"`,
		`"${record.user.name}-${record.status}"`, `"user %{if record.ok}ok%{else}no%{endif}"`,
		`record.user.name`, `record.user["id"]`, `record.tags[1]`,
		`upper(record.user.name)`, `lower("ABC")`, `length(record.tags)`,
		`contains(record.tags, "b")`, `join(",", record.tags)`, `split(" ", record.message)`,
		`replace(record.message, "GET", "PUT")`, `trimprefix(record.message, "GET ")`,
		`startswith(record.message, "GET")`, `endswith(record.message, "200")`, `strcontains(record.message, "index")`,
		`regex_match(record.message, "^GET")`, `regex_replace(record.message, "[0-9]+", "N")`,
		`substr(record.message, 0, 3)`, `format("%s=%d", record.user.name, record.status)`,
		`[for t in record.tags : upper(t)]`, `{ a = record.status, b = "x" }`, `[record.status, record.ok]`,
		`max(record.status, 3)`, `abs(-record.ms)`, `tostring(record.status)`, `tonumber("42")`,
		`jsonencode(record.user)`, `keys(record.user)`, `merge(record.user, { extra = 1 })`,
	} {
		f, diags := compile(t, src)
		if diags.HasErrors() {
			t.Errorf("%s: %s", src, diags.Error())
			continue
		}
		rec := testRecord()
		got, err := f(rec)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		want, ok := hclValue(t, src, testRecord())
		if !ok {
			t.Errorf("%s: HCL cannot evaluate it", src)
			continue
		}
		if !expr.Equal(got, want) {
			t.Errorf("%s = %#v, HCL says %#v", src, got, want)
		}
		if !expr.Equal(rec, testRecord()) {
			t.Errorf("%s changed the record", src)
		}
	}
}

// TestNativeExtensions: where the compiled form deliberately differs from
// HCL's evaluator: a missing field reads as null (HCL: an error), and
// length counts a string's characters.
func TestNativeExtensions(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]any{
		`record.missing`: nil, `record.missing == null`: true, `record.missing.deeper`: nil,
		`length(record.message)`: int64(19),
	} {
		f, diags := compile(t, src)
		if diags.HasErrors() {
			t.Fatalf("%s: %s", src, diags.Error())
		}
		if got, err := f(testRecord()); err != nil || !expr.Equal(got, want) {
			t.Errorf("%s = %#v, %v; want %#v", src, got, err, want)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		`record.message + 1`:        "number",
		`record.user.name.first`:    "cannot index a string",
		`record.ok ? 1 : 2`:         "",
		`record.status ? 1 : 2`:     "condition must be a bool",
		`!record.status`:            "! wants a bool",
		`upper(record.status) == 1`: "",
	} {
		f, diags := compile(t, src)
		if diags.HasErrors() {
			t.Errorf("%s: %s", src, diags.Error())
			continue
		}
		_, err := f(testRecord())
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", src, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: error %v, want one containing %q", src, err, want)
		}
	}
}

func TestCompileDiagnostics(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		`regex_match(record.message, "(")`: "Invalid regular expression",
		`upper()`:                          "Not enough function arguments", // folded: HCL's own check
		`upper(record.message, "x")`:       "Wrong number of function arguments",
		`nosuch(record.message)`:           "Call to unknown function",
	} {
		_, diags := compile(t, src)
		if !diags.HasErrors() || !strings.Contains(diags.Error(), want) {
			t.Errorf("%s: diagnostics %v, want %q", src, diags, want)
		}
	}
}

func TestScope(t *testing.T) {
	t.Parallel()
	e, _ := hclsyntax.ParseExpression([]byte(`agg + record.n`), "test.hcl", hcl.InitialPos)
	c := &expr.Compiler{Ctx: &hcl.EvalContext{}, Scope: []string{"record", "agg"}}
	f, diags := c.Compile(e)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	r := &expr.Object{}
	r.Set("n", int64(2))
	in := &expr.Object{}
	in.Set("record", r)
	in.Set("agg", int64(40))
	if v, err := f(in); err != nil || v != int64(42) {
		t.Fatalf("agg + record.n = %v, %v; want 42", v, err)
	}
}

func TestObject(t *testing.T) {
	t.Parallel()
	o := &expr.Object{}
	o.Set("a", int64(1))
	o.Set("b", "x")
	o.Set("a", int64(2))
	if o.Len() != 2 || strings.Join(o.Keys, ",") != "a,b" {
		t.Fatalf("keys %v", o.Keys)
	}
	if v, _ := o.Get("a"); v != int64(2) {
		t.Fatalf("a = %v", v)
	}
	if !o.Rename("a", "c") || strings.Join(o.Keys, ",") != "b,c" {
		t.Fatalf("rename: keys %v", o.Keys)
	}
	if !o.Delete("b") || o.Delete("b") || o.Len() != 1 {
		t.Fatalf("delete: keys %v", o.Keys)
	}
}

// FuzzCompile compiles arbitrary expressions and runs them against a
// record: nothing panics, and a run that succeeds gives the same value
// the second time.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{`record.status + 1`, `"${record.user.name}"`, `[for t in record.tags : upper(t)]`,
		`regex_replace(record.message, "[0-9]+", "N")`, `record.tags[1]`, `{ a = record.ms }`, `record.ok ? 1 : "x"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, diags := hclsyntax.ParseExpression([]byte(src), "fuzz.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			return
		}
		for _, tr := range e.Variables() {
			if tr.RootName() != expr.RecordVar {
				return // the loader rejects other references before compiling
			}
		}
		volatile := false
		_ = hclsyntax.VisitAll(e, func(n hclsyntax.Node) hcl.Diagnostics {
			if c, ok := n.(*hclsyntax.FunctionCallExpr); ok && (c.Name == "now" || c.Name == "file" || c.Name == "env") {
				volatile = true
			}
			return nil
		})
		if volatile {
			return
		}
		c := &expr.Compiler{Ctx: &hcl.EvalContext{Functions: expr.Functions("testdata")}}
		fn, diags := c.Compile(e)
		if diags.HasErrors() {
			return
		}
		v1, err1 := fn(testRecord())
		v2, err2 := fn(testRecord())
		if (err1 == nil) != (err2 == nil) || (err1 == nil && !expr.Equal(v1, v2)) {
			t.Fatalf("%q: %v, %v then %v, %v", src, v1, err1, v2, err2)
		}
	})
}

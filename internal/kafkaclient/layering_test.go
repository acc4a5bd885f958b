package kafkaclient_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// listed is what `go list -json` says of one package.
type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Deps       []string
}

var listOnce = sync.OnceValues(func() ([]listed, error) {
	// Only the fields read here: the whole -json output is ~10 times
	// larger (every package's Deps, Imports, file lists...) and costs as
	// much CPU again to print and decode.
	out, err := exec.Command("go", "list", "-json=ImportPath,Dir,GoFiles,Deps", "weir/...").Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		return nil, fmt.Errorf("go list found %d packages of weir: is the test running inside the module?", len(pkgs))
	}
	return pkgs, nil
})

// listModule lists every package of the module (once per test binary).
func listModule(t *testing.T) []listed {
	t.Helper()
	pkgs, err := listOnce()
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

func under(path, root string) bool { return path == root || strings.HasPrefix(path, root+"/") }

// TestLayering: the layers issue 15 separated stay separated. The broker's
// packages (weir broker, node, the test brokers) build without the
// producer front, the connector runtime, pipelines or streams; streams
// does not depend on the connector runtime; the connectors and ingest
// trees do not depend on each other.
func TestLayering(t *testing.T) {
	t.Parallel()
	rules := []struct {
		from      string
		forbidden []string
	}{
		{"weir/broker", []string{"weir/ingest", "weir/connectors", "weir/pipelines", "weir/streams"}},
		{"weir/streams", []string{"weir/connectors"}},
		{"weir/connectors", []string{"weir/ingest"}},
		{"weir/ingest", []string{"weir/connectors"}},
	}
	for _, p := range listModule(t) {
		for _, r := range rules {
			if !under(p.ImportPath, r.from) {
				continue
			}
			for _, d := range p.Deps {
				for _, f := range r.forbidden {
					if under(d, f) {
						t.Errorf("%s depends on %s (nothing under %s may depend on %s)", p.ImportPath, d, r.from, f)
					}
				}
			}
		}
	}
}

// TestClientsAreBuiltHere: outside tests, every franz-go client weir
// makes comes from kafkaclient.New, so settings every client needs (the
// partitioner, balancers, and TLS and SASL with issue 16) cannot be
// missed by one of them. There are no exceptions (the HTTP and syslog
// endpoints' own producers went away with the push-source contract).
// Likewise every schema registry client comes from internal/srclient
// (through kafkaclient.NewRegistry / OpenRegistry), so none misses the
// registry's TLS and basic auth settings.
func TestClientsAreBuiltHere(t *testing.T) {
	t.Parallel()
	builders := []struct{ importPath, home, use string }{
		{"github.com/twmb/franz-go/pkg/kgo", "weir/internal/kafkaclient", "kafkaclient.New"},
		{"github.com/twmb/franz-go/pkg/sr", "weir/internal/srclient", "kafkaclient.OpenRegistry or srclient.New"},
	}
	for _, p := range listModule(t) {
		for _, name := range p.GoFiles {
			path := filepath.Join(p.Dir, name)
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range builders {
				if p.ImportPath == b.home {
					continue
				}
				local := ""
				for _, im := range f.Imports {
					if ip, _ := strconv.Unquote(im.Path.Value); ip == b.importPath {
						local = filepath.Base(ip)
						if im.Name != nil {
							local = im.Name.Name
						}
					}
				}
				if local == "" {
					continue
				}
				ast.Inspect(f, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if !ok || sel.Sel.Name != "NewClient" {
						return true
					}
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == local {
						t.Errorf("%s: %s.NewClient outside %s: build the client with %s", fset.Position(sel.Pos()), filepath.Base(b.importPath), b.home, b.use)
					}
					return true
				})
			}
		}
	}
}

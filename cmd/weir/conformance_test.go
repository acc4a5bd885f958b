package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"weir/connectors"
)

// TestEveryKindHasADefinition: every source and sink kind the weir binary
// registers has a conformance definition: a test that passes
// conformance.TestSource or TestSink a def with its kind's name.
//
// It lives here rather than in connectors/conformance because this test
// binary registers every kind anyway: a test of its own there linked
// every connector (MySQL's parser, the Elasticsearch client) into one
// more test binary for this one check.
func TestEveryKindHasADefinition(t *testing.T) {
	t.Parallel()
	kindRE := regexp.MustCompile(`conformance\.(?:Source|Sink)Def\{\s*Kind:\s*"([^"]+)"`)
	defined := map[string]string{}
	err := filepath.WalkDir(filepath.Join("..", "..", "connectors"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range kindRE.FindAllSubmatch(b, -1) {
			defined[string(m[1])] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	kinds := connectors.Default.Kinds()
	for _, k := range kinds {
		if path, ok := defined[k.Name]; ok {
			t.Logf("kind %q: %s", k.Name, path)
			continue
		}
		t.Errorf("kind %q has no conformance definition (a test calling conformance.TestSource/TestSink with Kind %q)", k.Name, k.Name)
	}
	if len(kinds) < 8 {
		t.Errorf("%d source and sink kinds registered: the weir binary registers every connector package's kinds", len(kinds))
	}
}

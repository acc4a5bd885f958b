package conformance_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"weir/connectors"
	_ "weir/connectors/elasticsearch"
	_ "weir/connectors/file"
	_ "weir/connectors/filesink"
	_ "weir/connectors/http"
	_ "weir/connectors/kafkasink"
	_ "weir/connectors/mysql"
	_ "weir/connectors/stdout"
	_ "weir/connectors/syslog"
)

// Every kind registered by the connector packages has a definition: a
// test that passes conformance.TestSource or TestSink a def with its
// kind's name.
func TestEveryKindHasADefinition(t *testing.T) {
	kindRE := regexp.MustCompile(`conformance\.(?:Source|Sink)Def\{\s*Kind:\s*"([^"]+)"`)
	defined := map[string]string{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
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
	for _, k := range connectors.Default.Kinds() {
		if path, ok := defined[k.Name]; ok {
			t.Logf("kind %q: %s", k.Name, path)
			continue
		}
		t.Errorf("kind %q has no conformance definition (a test calling conformance.TestSource/TestSink with Kind %q)", k.Name, k.Name)
	}
}

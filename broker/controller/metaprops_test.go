package controller

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"weir/broker/metadata"
)

// FuzzMetaProperties: whatever a meta.properties holds, loading the
// directory id does not panic; when it succeeds the id is stable (a
// second load gives the same one) and its string form parses back.
func FuzzMetaProperties(f *testing.F) {
	f.Add("#\ncluster.id=abc\ndirectory.id=2mjIv_4qQuys6wQUzZWqnw\nnode.id=1\nversion=1\n")
	f.Add("version=0\nbroker.id=1\n")
	f.Add("node.id=2\n")
	f.Add("directory.id=not-a-uuid\n")
	f.Add("no equals sign\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, content string) {
		dir := t.TempDir()
		path := filepath.Join(dir, MetaPropertiesFile)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		u, err := loadDirectoryID(dir, 1)
		if err != nil {
			return
		}
		if u == (metadata.UUID{}) && strings.Contains(content, "directory.id") {
			// A zero id written by hand is legal Kafka (Uuid.ZERO_UUID).
			return
		}
		again, err := loadDirectoryID(dir, 1)
		if err != nil || again != u {
			t.Fatalf("second load: %v %v, first %v", again, err, u)
		}
		back, err := ParseKafkaUUID(u.String())
		if err != nil || back != u {
			t.Fatalf("%v does not parse back: %v %v", u, back, err)
		}
	})
}

func TestLoadDirectoryIDRefusesAnotherNode(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, MetaPropertiesFile), []byte("node.id=2\ndirectory.id=2mjIv_4qQuys6wQUzZWqnw\nversion=1\ncluster.id=c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadDirectoryID(dir, 1); err == nil || !strings.Contains(err.Error(), "is of node 2, not node 1") {
		t.Fatalf("loading node 2's meta.properties as node 1: %v", err)
	}
	u, err := loadDirectoryID(dir, 2)
	if err != nil || u.String() != "2mjIv_4qQuys6wQUzZWqnw" {
		t.Fatalf("node 2: %v %v", u, err)
	}
}

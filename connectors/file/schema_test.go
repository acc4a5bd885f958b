package file

import (
	"os"
	"testing"
)

// TestEventSchemaText: the schema described once in eventSchema is, byte
// for byte, the text the file source registered before it was described
// that way (testdata/LogEvent.avsc), so existing subjects keep their
// schema ids.
func TestEventSchemaText(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile("testdata/LogEvent.avsc")
	if err != nil {
		t.Fatal(err)
	}
	if EventSchema != string(want) {
		t.Fatalf("EventSchema:\n%s\nwant:\n%s", EventSchema, want)
	}
}

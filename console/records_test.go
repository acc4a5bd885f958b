package console

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/sr"

	"weir/internal/browsertest"
	"weir/internal/srclient"
	"weir/internal/testkit"
	"weir/schemas"
)

const pageViewSchema = `{"type":"record","name":"PageView","namespace":"weir.test","fields":[
 {"name":"user","type":"string"},{"name":"path","type":"string"},{"name":"ms","type":"long"}]}`

// registerAvro registers text under subject and returns an encoder of
// Confluent-framed Avro with its id.
func registerAvro(t testing.TB, regURL, subject, text string) func(v map[string]any) []byte {
	t.Helper()
	cl, err := srclient.New(srclient.Options{URLs: regURL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A registry that just started answers 5xx until it has read its
	// topic: not yet.
	var ss sr.SubjectSchema
	testkit.CheckFor(t, 30*time.Second, func() error {
		ss, err = cl.CreateSchema(ctx, subject, sr.Schema{Schema: text, Type: sr.TypeAvro})
		return err
	})
	sch, err := schemas.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	serde := schemas.NewSerde(nil)
	serde.Add(int32(ss.ID), sch)
	return func(v map[string]any) []byte {
		b, err := serde.Encode(context.Background(), int32(ss.ID), v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// TestRecordBrowser: the record browser shows the latest records,
// records from an offset, from a time and by key, with Avro values
// decoded through the registry and JSON values indented; bad input gets
// a clear message and the server goes on: an offset out of range (400),
// an undecodable Avro value (shown with the reason, page 200), a topic
// deleted while browsed (404).
func TestRecordBrowser(t *testing.T) {
	br := browsertest.Shared(t)
	t.Parallel()
	e := startEnv(t, envOptions{})
	enc := registerAvro(t, e.reg, "views-value", pageViewSchema)
	e.b.CreateTopic("views", 2, nil)
	e.produce(t, "views", 12, func(i int) string { return fmt.Sprint("user-", i%3) }, func(i int) []byte {
		return enc(map[string]any{"user": fmt.Sprint("user-", i%3), "path": fmt.Sprintf("/page/%d", i), "ms": int64(1000 + i)})
	})
	e.b.CreateTopic("events", 1, nil)
	e.produce(t, "events", 5, func(i int) string { return "" }, func(i int) []byte { return fmt.Appendf(nil, `{"event":"e%d","n":%d}`, i, i) })
	// Magic byte 0 and a schema id the registry does not have.
	e.produce(t, "events", 1, func(i int) string { return "bad" }, func(i int) []byte { return []byte{0, 0, 0, 0x27, 0x0f, 1, 2, 3} })

	for _, w := range []int64{1280, 390} {
		tab := br.Tab(t, browsertest.TabOptions{Width: w, Height: 900})
		base := e.base + "topics/views/records"
		text := checkPage(t, tab, "records-latest", base, 200)
		if n := browsertest.Eval[int](tab, `document.querySelectorAll("#records tbody tr").length`); n != 12 {
			t.Errorf("latest records of views: %d rows, want 12", n)
		}
		for _, want := range []string{"avro (schema id", `"path": "/page/11"`, `"user": "user-2"`} {
			if !strings.Contains(text, want) {
				t.Errorf("records page lacks %q:\n%s", want, text)
			}
		}
		// By key, in every partition.
		text = checkPage(t, tab, "records-key", base+"?key=user-1", 200)
		if n := browsertest.Eval[int](tab, `document.querySelectorAll("#records tbody tr").length`); n != 4 || strings.Contains(text, `"user-2"`) {
			t.Errorf("records with key user-1: %d rows, want 4:\n%s", n, text)
		}
		// From an offset of one partition, limited.
		checkPage(t, tab, "records-offset", base+"?partition=0&offset=1&limit=2", 200)
		offs := browsertest.Eval[[]string](tab, `[...document.querySelectorAll("#records tbody tr td:nth-child(2)")].map(td => td.textContent)`)
		if strings.Join(offs, ",") != "1,2" {
			t.Errorf("partition 0 from offset 1, limit 2: offsets %v", offs)
		}
		// From a time: everything was written after the epoch; nothing
		// after a future time.
		checkPage(t, tab, "records-time", base+"?timestamp=2001-01-01T00:00", 200)
		if n := browsertest.Eval[int](tab, `document.querySelectorAll("#records tbody tr").length`); n != 12 {
			t.Errorf("records from 2001: %d rows, want 12", n)
		}
		checkPage(t, tab, "records-future", base+"?timestamp="+url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339)), 200)
		if got := tab.Text("#records tbody"); got != "No records." {
			t.Errorf("records from an hour ahead: %q", got)
		}
		// JSON, and an undecodable Avro value.
		text = checkPage(t, tab, "records-json", e.base+"topics/events/records", 200)
		if !strings.Contains(text, `"event": "e4"`) || !strings.Contains(text, "json") {
			t.Errorf("events: JSON not shown indented:\n%s", text)
		}
		if !strings.Contains(text, "avro (schema id 9999)") || !strings.Contains(text, "undecodable") {
			t.Errorf("events: the undecodable Avro value is not explained:\n%s", text)
		}
		// Out of range: 400 with the partition's range.
		checkPage(t, tab, "records-out-of-range", base+"?partition=1&offset=999", 400)
		if got := tab.Text("[role=alert]"); !strings.Contains(got, "offset 999 is out of range") || !strings.Contains(got, "partition 1 of views holds offsets 0 to") {
			t.Errorf("out of range: alert %q", got)
		}
		if st := tab.Go(base + "?partition=7"); st != 400 || !strings.Contains(tab.Text("[role=alert]"), "views has partitions 0 to 1") {
			t.Errorf("partition 7: status %d, alert %q", st, tab.Text("[role=alert]"))
		}
	}
	// The topic is deleted while browsed: 404 saying so; the console
	// goes on serving.
	adm := kadm.NewClient(e.b.Client())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.DeleteTopic(ctx, "views"); err != nil {
		t.Fatal(err)
	}
	tab := br.Tab(t, browsertest.TabOptions{})
	if st := tab.Go(e.base + "topics/views/records?key=user-1"); st != 404 || !strings.Contains(tab.Text("[role=alert]"), `topic "views" does not exist`) {
		t.Errorf("deleted topic: status %d, alert %q", st, tab.Text("[role=alert]"))
	}
	tab.CheckA11y("records-deleted")
	tab.Screenshot("records-deleted")
	if st := tab.Go(e.base + "topics"); st != 200 || strings.Contains(tab.Text("#topics"), "views") {
		t.Errorf("after the deletion: topics page status %d, shows views: %q", st, tab.Text("#topics"))
	}
}

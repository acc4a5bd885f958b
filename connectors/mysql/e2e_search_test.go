package mysql

// Helpers of TestEndToEnd's search-index check: the sink's consumer group
// and the index read back and compared with the table.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"weir/broker/brokertest/testbroker"
)

// sinkGroup watches the consumer group of a sink task that is a static
// member (instance) of group, consuming topic.
type sinkGroup struct {
	t                      *testing.T
	adm                    *kadm.Client
	group, instance, topic string
}

// describe returns the group's state, the member id of the instance (""
// if none) and the number of partitions assigned to it.
func (g *sinkGroup) describe() (state, id string, partitions int, err error) {
	gs, err := g.adm.DescribeGroups(context.Background(), g.group)
	if err != nil {
		return "", "", 0, err
	}
	d := gs[g.group]
	for _, m := range d.Members {
		if m.InstanceID == nil || *m.InstanceID != g.instance {
			continue
		}
		id = m.MemberID
		if a, ok := m.Assigned.AsConsumer(); ok {
			for _, at := range a.Topics {
				partitions += len(at.Partitions)
			}
		}
	}
	return d.State, id, partitions, d.Err
}

// member returns the member id of the instance ("" if none).
func (g *sinkGroup) member() string {
	_, id, _, _ := g.describe()
	return id
}

// waitReplaced waits until a member other than old holds the instance
// and every partition of the topic in a Stable group of one.
func (g *sinkGroup) waitReplaced(old string, timeout time.Duration) {
	g.t.Helper()
	testbroker.CheckFor(g.t, timeout, func() error {
		state, id, n, err := g.describe()
		if err != nil {
			return err
		}
		if state != "Stable" || id == "" || id == old || n != 3 {
			return fmt.Errorf("group %s: %s, instance %s is member %q (before the kill %q) with %d of 3 partitions",
				g.group, state, g.instance, id, old, n)
		}
		return nil
	})
}

// progress returns the records the group has committed and the records
// in the topic.
func (g *sinkGroup) progress() (done, end int64) {
	g.t.Helper()
	ends, err := g.adm.ListEndOffsets(context.Background(), g.topic)
	if err != nil {
		g.t.Fatal(err)
	}
	cs, err := g.adm.FetchOffsets(context.Background(), g.group)
	if err != nil {
		g.t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		end += o.Offset
		if c, ok := cs.Lookup(o.Topic, o.Partition); ok && c.At > 0 {
			done += c.At
		}
	})
	return done, end
}

// searchDocs reads every document of index (refreshed first) with a
// scroll: _id → _source, numbers as json.Number.
func searchDocs(url, index string) (map[string]map[string]any, error) {
	call := func(method, path, body string, out any) error {
		req, err := http.NewRequest(method, url+path, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s %s: %s: %.500s", method, path, resp.Status, b)
		}
		if out == nil {
			return nil
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		return d.Decode(out)
	}
	if err := call("POST", "/"+index+"/_refresh", "", nil); err != nil {
		return nil, err
	}
	var page struct {
		ScrollID string `json:"_scroll_id"`
		Hits     struct {
			Hits []struct {
				ID     string         `json:"_id"`
				Source map[string]any `json:"_source"`
			}
		}
	}
	if err := call("POST", "/"+index+"/_search?scroll=1m", `{"size":10000,"sort":["_doc"]}`, &page); err != nil {
		return nil, err
	}
	docs := map[string]map[string]any{}
	for len(page.Hits.Hits) > 0 {
		for _, h := range page.Hits.Hits {
			docs[h.ID] = h.Source
		}
		id := page.ScrollID
		page.Hits.Hits = nil
		if err := call("POST", "/_search/scroll", fmt.Sprintf(`{"scroll":"1m","scroll_id":%q}`, id), &page); err != nil {
			return nil, err
		}
	}
	call("DELETE", "/_search/scroll", fmt.Sprintf(`{"scroll_id":%q}`, page.ScrollID), nil)
	return docs, nil
}

// equalIndex reports how the documents differ from the table rows (key
// → column → text, as tableRows reads them); nil means the same ids
// (keyCol's value) and in every document the row's column values. A
// column added after a document was last written is absent from it and
// reads as NULL; a dropped column lingers in documents written before
// the drop and is ignored. Any other field is a difference.
func equalIndex(docs map[string]map[string]any, table map[string]map[string]string, keyCol string, droppedCols ...string) error {
	dropped := map[string]bool{}
	for _, c := range droppedCols {
		dropped[c] = true
	}
	var diffs []string
	ids := map[string]bool{}
	for _, row := range table {
		id := row[keyCol]
		ids[id] = true
		doc, ok := docs[id]
		if !ok {
			diffs = append(diffs, "row "+id+" has no document")
			continue
		}
		for col, want := range row {
			got := "NULL"
			if v, ok := doc[col]; ok {
				got = docText(v)
			}
			if !sameValue(got, want) {
				diffs = append(diffs, fmt.Sprintf("document %s: %s = %s, table has %s", id, col, got, want))
			}
		}
		for field := range doc {
			if _, ok := row[field]; !ok && !dropped[field] {
				diffs = append(diffs, fmt.Sprintf("document %s has field %s, the table has no such column", id, field))
			}
		}
	}
	for id := range docs {
		if !ids[id] {
			diffs = append(diffs, "document "+id+" has no row (deleted rows must be absent)")
		}
	}
	if len(diffs) > 0 {
		n := len(diffs)
		sort.Strings(diffs)
		if n > 10 {
			diffs = diffs[:10]
		}
		return fmt.Errorf("index (%d documents) != table (%d rows), %d differences:\n%s", len(docs), len(table), n, strings.Join(diffs, "\n"))
	}
	return nil
}

func docText(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return x
	case json.Number:
		return x.String()
	}
	return fmt.Sprint(v)
}

// sameValue compares a document's value with a table's text; numbers
// (a DOUBLE's text differs between MariaDB and JSON) by value.
func sameValue(doc, table string) bool {
	if doc == table {
		return true
	}
	a, err1 := strconv.ParseFloat(doc, 64)
	b, err2 := strconv.ParseFloat(table, 64)
	return err1 == nil && err2 == nil && a == b
}

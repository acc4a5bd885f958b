package console

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

type topicsData struct {
	Topics   []topicRow
	Internal bool // internal topics shown
	// Page of Pages (topicsPerPage topics a page); Prev and Next are
	// the neighbours' numbers, 0 for none; Total counts the topics.
	Page, Pages, Prev, Next, Total int
	AsOf                           AsOf
}

// topicsPerPage bounds the topics list: only the shown topics' offsets
// and sizes are asked for.
const topicsPerPage = 100

type topicRow struct {
	Name        string
	Partitions  int
	Replication int
	Records     int64 // end - start, summed
	Size        int64
	Internal    bool
	Err         string
}

type topicsKey struct {
	page     int
	internal bool
}

// topicsPage lists the topics with their partitions, records and size.
func (c *Console) topicsPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := c.ctx(r)
	defer cancel()
	showInternal := r.URL.Query().Get("internal") == "1"
	page := 1
	if s := r.URL.Query().Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			c.badRequest(w, r, "Topics", "page "+strconv.Quote(s)+": want a page number from 1")
			return
		}
		page = n
	}
	d, err := c.topicsList(ctx, page, showInternal)
	if errors.Is(err, errStaleMeta) {
		// A topic of the shared metadata was deleted since: once more
		// with metadata taken anew.
		c.forgetClusterViews()
		d, err = c.topicsList(ctx, page, showInternal)
	}
	c.render(w, r, "topics", "Topics", d, err)
}

// errStaleMeta: the shared metadata names a topic that is gone.
var errStaleMeta = errors.New("the metadata names a deleted topic")

// staleMeta: err or the offsets listed say a topic the metadata named
// does not exist (any more).
func staleMeta(err error, listed ...kadm.ListedOffsets) bool {
	if errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
		return true
	}
	for _, l := range listed {
		stale := false
		l.Each(func(o kadm.ListedOffset) {
			stale = stale || errors.Is(o.Err, kerr.UnknownTopicOrPartition)
		})
		if stale {
			return true
		}
	}
	return false
}

// topicsList is the topics list's page (errStaleMeta: ask again with
// fresh metadata).
func (c *Console) topicsList(ctx context.Context, page int, showInternal bool) (topicsData, error) {
	m, metaAt, err := c.meta(ctx)
	if err != nil {
		return topicsData{Internal: showInternal, Page: 1}, err
	}
	var names []string
	for _, n := range m.Names { // sorted
		t := m.Topics[n]
		if t.IsInternal && !showInternal || errors.Is(t.Err, kerr.UnknownTopicOrPartition) {
			continue // (a topic being deleted is listed with this error)
		}
		names = append(names, n)
	}
	pages := max(1, (len(names)+topicsPerPage-1)/topicsPerPage)
	page = min(page, pages)
	// The page's offsets and sizes, shared by its viewers for CacheFor.
	c.topicsMu.Lock()
	if c.topicsCache == nil {
		c.topicsCache = map[topicsKey]*shared[topicsData]{}
	}
	key := topicsKey{page: page, internal: showInternal}
	sh := c.topicsCache[key]
	if sh == nil {
		sh = &shared[topicsData]{}
		c.topicsCache[key] = sh
	}
	c.topicsMu.Unlock()
	d, at, err := sh.get(ctx, c.cfg.CacheFor, func(ctx context.Context) (topicsData, error) {
		d := topicsData{Internal: showInternal, Page: page, Pages: pages, Total: len(names)}
		if page > 1 {
			d.Prev = page - 1
		}
		if page < pages {
			d.Next = page + 1
		}
		return c.loadTopics(ctx, m, names[(page-1)*topicsPerPage:min(len(names), page*topicsPerPage)], d)
	})
	if metaAt.Before(at) {
		at = metaAt
	}
	d.AsOf = asOf(at, c.cfg.CacheFor)
	return d, err
}

// loadTopics fills d's rows: the named topics' partitions, records and
// sizes.
func (c *Console) loadTopics(ctx context.Context, m *clusterMeta, names []string, d topicsData) (topicsData, error) {
	td := m.Topics
	// DescribeLogDirs asks for the partitions named: a topic with an
	// empty partition set asks for none.
	parts := partitionsOf(td, names)
	set := kadm.TopicsSet{}
	for n, ps := range parts {
		set.Add(n, ps...)
	}
	// Three independent requests at once.
	var (
		starts, ends     kadm.ListedOffsets
		sizes            kadm.DescribedAllLogDirs
		errS, errE, errD error
		wg               sync.WaitGroup
	)
	wg.Add(3)
	go func() { defer wg.Done(); starts, errS = c.listOffsetsWith(ctx, m, atStart, parts) }()
	go func() { defer wg.Done(); ends, errE = c.listOffsetsWith(ctx, m, atEnd, parts) }()
	go func() { defer wg.Done(); sizes, errD = c.adm.DescribeAllLogDirs(ctx, set) }()
	wg.Wait()
	if staleMeta(errors.Join(errS, errE, errD), starts, ends) {
		return d, errStaleMeta
	}
	size := map[string]int64{}
	if errD == nil {
		sizes.Each(func(d kadm.DescribedLogDir) {
			for t, ps := range d.Topics {
				for _, p := range ps {
					size[t] += p.Size
				}
			}
		})
	}
	for _, name := range names {
		t := td[name]
		row := topicRow{Name: name, Partitions: len(t.Partitions), Internal: t.IsInternal, Size: size[name]}
		for _, p := range t.Partitions {
			row.Replication = max(row.Replication, len(p.Replicas))
			if errS == nil && errE == nil {
				s, ok1 := starts.Lookup(name, p.Partition)
				e, ok2 := ends.Lookup(name, p.Partition)
				if ok1 && ok2 && s.Err == nil && e.Err == nil {
					row.Records += e.Offset - s.Offset
				}
			}
		}
		if t.Err != nil {
			row.Err = t.Err.Error()
		}
		d.Topics = append(d.Topics, row)
	}
	return d, errors.Join(errS, errE, errD)
}

type topicData struct {
	Name       string
	Internal   bool
	Partitions []topicPartition
	Configs    []configRow
	Records    int64
	Size       int64
	Throughput template.HTML // the chart
}

type topicPartition struct {
	partitionRow
	Start, End int64
	Size       int64
}

type configRow struct {
	Name, Value, Source string
	Sensitive           bool
	Default             bool
}

// topicPage: a topic's configs, partitions with offsets and sizes, and
// its throughput history.
func (c *Console) topicPage(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	ctx, cancel := c.ctx(r)
	defer cancel()
	md, err := c.adm.Metadata(ctx, topic)
	if err != nil {
		c.render(w, r, "topic", "Topic "+topic, nil, err)
		return
	}
	t, ok := md.Topics[topic]
	if !ok || errors.Is(t.Err, kerr.UnknownTopicOrPartition) {
		c.notFound(w, r, "Topic "+topic, fmt.Sprintf("topic %q does not exist (deleted, or never created)", topic))
		return
	}
	d := topicData{Name: topic, Internal: t.IsInternal}
	var errs []error
	if t.Err != nil {
		errs = append(errs, fmt.Errorf("topic %s: %w", topic, t.Err))
	}
	var (
		starts, ends     kadm.ListedOffsets
		dirs             kadm.DescribedAllLogDirs
		rcs              kadm.ResourceConfigs
		errS, errE, errD error
		wg               sync.WaitGroup
	)
	wg.Add(4)
	parts := partitionsOf(md.Topics, []string{topic})
	tm := topicMeta(md)
	go func() { defer wg.Done(); starts, errS = c.listOffsetsWith(ctx, tm, atStart, parts) }()
	go func() { defer wg.Done(); ends, errE = c.listOffsetsWith(ctx, tm, atEnd, parts) }()
	set := kadm.TopicsSet{}
	set.Add(topic, parts[topic]...)
	go func() { defer wg.Done(); dirs, errD = c.adm.DescribeAllLogDirs(ctx, set) }()
	go func() { defer wg.Done(); rcs, err = c.adm.DescribeTopicConfigs(ctx, topic) }()
	wg.Wait()
	errs = append(errs, errS, errE, errD)
	for _, p := range t.Partitions.Sorted() {
		tp := topicPartition{partitionRow: rowOf(p)}
		if s, ok := starts.Lookup(topic, p.Partition); ok && s.Err == nil {
			tp.Start = s.Offset
		}
		if e, ok := ends.Lookup(topic, p.Partition); ok && e.Err == nil {
			tp.End = e.Offset
		}
		if errD == nil {
			// The leader's copy: every replica holds the same records.
			if bd, ok := dirs[p.Leader]; ok {
				if dp, ok := bd.LookupPartition(topic, p.Partition); ok {
					tp.Size = dp.Size
				}
			}
		}
		d.Records += tp.End - tp.Start
		d.Size += tp.Size
		d.Partitions = append(d.Partitions, tp)
	}
	if err == nil {
		var rc kadm.ResourceConfig
		rc, err = rcs.On(topic, nil)
		if err == nil && rc.Err != nil {
			err = rc.Err
		}
		for _, cf := range rc.Configs {
			row := configRow{Name: cf.Key, Source: strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(cf.Source.String(), "CONFIG_SOURCE_"), "_CONFIG")),
				Sensitive: cf.Sensitive, Default: cf.Source.String() == "DEFAULT_CONFIG"}
			if cf.Value != nil {
				row.Value = *cf.Value
			}
			d.Configs = append(d.Configs, row)
		}
		sort.Slice(d.Configs, func(i, j int) bool { return d.Configs[i].Name < d.Configs[j].Name })
	}
	errs = append(errs, err)
	d.Throughput = Chart{Title: "Throughput of " + topic, Unit: "records/s",
		Series: []Series{c.hist.throughput(topic)},
		Empty:  fmt.Sprintf("No rate yet: the end offsets are sampled every %s; the chart needs two samples.", c.cfg.SampleInterval)}.SVG()
	c.render(w, r, "topic", "Topic "+topic, d, errors.Join(errs...))
}

// createTopic: POST /console/topics (name, partitions, replication).
func (c *Console) createTopic(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSpace(r.FormValue("name"))
	parts, err1 := strconv.ParseInt(r.FormValue("partitions"), 10, 32)
	repl, err2 := strconv.ParseInt(r.FormValue("replication"), 10, 16)
	switch {
	case name == "":
		c.badRequest(w, r, "Create topic", "a topic needs a name")
		return
	case err1 != nil || parts < 1:
		c.badRequest(w, r, "Create topic", fmt.Sprintf("partitions %q: want a whole number from 1", r.FormValue("partitions")))
		return
	case err2 != nil || repl < 1:
		c.badRequest(w, r, "Create topic", fmt.Sprintf("replication %q: want a whole number from 1", r.FormValue("replication")))
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	resp, err := c.adm.CreateTopic(ctx, int32(parts), int16(repl), nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		c.render(w, r, "message", "Create topic", nil, fmt.Errorf("creating topic %s: %w", name, err))
		return
	}
	c.forgetClusterViews()
	http.Redirect(w, r, "/console/topics/"+url.PathEscape(name), http.StatusSeeOther)
}

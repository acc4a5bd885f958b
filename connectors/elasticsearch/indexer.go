package elasticsearch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	es "github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esutil"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/connectors"
	"weir/internal/kafkaclient"
	"weir/internal/srclient"
	"weir/schemas"
)

// ErrRefused is wrapped by Flush errors when the server refuses bulk
// requests as such (401, 403, 404, 405: wrong credentials or URL). No
// record is dead-lettered for it and the error is not retriable: the task
// stops without committing, so the records are delivered again once the
// configuration is fixed.
var ErrRefused = errors.New("search server refused the bulk request")

// ItemError is the server's rejection of one bulk item, as the bulk
// response reports it. It is the error dead-lettered records carry.
type ItemError struct {
	Index  string
	ID     string
	Action string
	Status int
	Type   string // mapper_parsing_exception, es_rejected_execution_exception, ...
	Reason string
	Cause  string // caused_by type: reason
}

func (e *ItemError) Error() string {
	s := fmt.Sprintf("search server rejected %s of document [%s] in index [%s]: status %d: %s: %s", e.Action, e.ID, e.Index, e.Status, e.Type, e.Reason)
	if e.Cause != "" {
		s += " (caused by " + e.Cause + ")"
	}
	return s
}

// Stats counts what an Indexer did.
type Stats struct {
	Stored       uint64 // items the server stored (or had already: see the package doc)
	DeadLettered uint64 // records given to the dead-letter callback
	Retried      uint64 // item retries
	// Busy counts items retried because the server's thread pool refused
	// their whole bulk request (Elasticsearch 8 under write load); they
	// are included in Retried.
	Busy     uint64
	Requests uint64 // bulk requests sent
}

// Indexer is the sink's core: it turns records into bulk actions, sends
// them with esutil.BulkIndexer, reads every item's result, retries the
// retryable ones with exponential backoff and jitter, and hands the
// others to the dead-letter callback with the server's error.
//
// Add and Flush must not be called concurrently (the connector runtime
// serializes them). Flush returns nil only when every record added so far
// is stored or dead-lettered.
type Indexer struct {
	cfg        Config
	b          *builder
	client     *es.Client
	pt         *productTransport
	bi         esutil.BulkIndexer
	deadLetter func(*kgo.Record, error)
	m          *connectors.Metrics
	log        *zap.Logger

	seq      uint64
	cycle    []*op           // ops since the last successful Flush that are not finished
	latest   map[string]*op  // newest op per index+id in this cycle
	inflight map[string]bool // index+id added to the bulk indexer since its last flush
	unsent   int             // ops added since the bulk indexer's last flush
	resubmit bool            // cycle holds ops to send again (a Flush failed)
	indices  map[string]bool // cdc: indices checked (and created when missing) by ensureCDCIndex
	partial  *kgo.Record     // first record of a Write that failed midway
	done     int             // how many of its records were added
	stats    struct{ stored, dead, retried, busy atomic.Uint64 }
}

// NewIndexer builds an Indexer. deadLetter receives records that cannot
// be stored, with the reason (an *ItemError for server rejections); m and
// log may be nil.
func NewIndexer(cfg Config, deadLetter func(*kgo.Record, error), m *connectors.Metrics, log *zap.Logger) (*Indexer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", connectors.ErrConfig, err)
	}
	if log == nil {
		log = zap.NewNop()
	}
	var serde *schemas.Serde
	if cfg.SchemaRegistryURL != "" {
		cl, err := kafkaclient.OpenRegistry(cfg.SchemaRegistryURL, cfg.SchemaRegistryConfig)
		if err != nil {
			return nil, fmt.Errorf("%w: schema_registry_url: %w", connectors.ErrConfig, err)
		}
		serde = schemas.NewSerde(srclient.Source(cl))
	}
	b, err := newBuilder(&cfg, serde)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", connectors.ErrConfig, err)
	}
	client, pt, err := newClient(&cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", connectors.ErrConfig, err)
	}
	ix := &Indexer{cfg: cfg, b: b, client: client, pt: pt, deadLetter: deadLetter, m: m, log: log,
		latest: map[string]*op{}, inflight: map[string]bool{}, indices: map[string]bool{}}
	ix.bi, err = esutil.NewBulkIndexer(esutil.BulkIndexerConfig{
		Client:        client,
		NumWorkers:    cfg.Workers,
		FlushBytes:    cfg.BulkMaxBytes,
		FlushInterval: cfg.FlushInterval,
		Pipeline:      cfg.Pipeline,
		OnError: func(_ context.Context, err error) {
			log.Warn("bulk request failed", zap.Error(err))
		},
	})
	if err != nil {
		return nil, err
	}
	return ix, nil
}

// Server returns what the server said it is, once a request identified it
// (only servers without X-Elastic-Product are asked; nil otherwise).
func (ix *Indexer) Server() *ServerInfo { return ix.pt.Info() }

// Stats returns the counters so far.
func (ix *Indexer) Stats() Stats {
	return Stats{Stored: ix.stats.stored.Load(), DeadLettered: ix.stats.dead.Load(),
		Retried: ix.stats.retried.Load(), Busy: ix.stats.busy.Load(), Requests: ix.bi.Stats().NumRequests}
}

// Add turns rs into bulk actions and queues them. Records that can never
// be indexed (bad JSON, a missing id or version) go to the dead-letter
// callback at once. It returns an error wrapping connectors.ErrRetriable
// when a record cannot be decoded yet (schema registry unreachable);
// calling Add again with the same rs continues where it stopped.
func (ix *Indexer) Add(ctx context.Context, rs []*kgo.Record) error {
	if err := ix.resubmitPending(ctx); err != nil {
		return err
	}
	start := 0
	if ix.partial != nil && len(rs) > 0 && rs[0] == ix.partial {
		start = ix.done
	}
	ix.partial = nil
	for i := start; i < len(rs); i++ {
		r := rs[i]
		o, err := ix.b.build(ctx, r)
		if err != nil {
			if errors.Is(err, errRedundantTombstone) {
				continue
			}
			if errors.Is(err, connectors.ErrBadRecord) {
				ix.dead(r, err)
				continue
			}
			ix.partial, ix.done = rs[0], i
			return err
		}
		if ix.cfg.CDC && !ix.indices[o.index] {
			if err := ix.ensureCDCIndex(ctx, o.index); err != nil {
				ix.partial, ix.done = rs[0], i
				return err
			}
			ix.indices[o.index] = true
		}
		ix.seq++
		o.seq = ix.seq
		ix.cycle = append(ix.cycle, o)
		if o.key != "" {
			ix.latest[o.key] = o
		}
		if err := ix.submit(ctx, o); err != nil {
			ix.partial, ix.done = rs[0], i+1
			ix.resubmit = true
			return err
		}
	}
	return nil
}

// submit adds o to the bulk indexer. Two actions on the same document are
// never in flight at once (bulk workers run concurrently and could apply
// them out of order): a second one waits for the first to finish.
func (ix *Indexer) submit(ctx context.Context, o *op) error {
	if (o.key != "" && ix.inflight[o.key]) || ix.unsent >= ix.cfg.BulkMaxDocs {
		if err := ix.flushBulk(ctx); err != nil {
			return err
		}
	}
	if o.key != "" {
		ix.inflight[o.key] = true
	}
	ix.unsent++
	o.outcome, o.err = outcomePending, nil
	item := esutil.BulkIndexerItem{
		Index:      o.index,
		Action:     o.action,
		DocumentID: o.id,
		OnSuccess: func(context.Context, esutil.BulkIndexerItem, esutil.BulkIndexerResponseItem) {
			o.outcome = outcomeDone
		},
		OnFailure: func(_ context.Context, _ esutil.BulkIndexerItem, res esutil.BulkIndexerResponseItem, err error) {
			o.outcome, o.err = classify(o, res, err)
		},
	}
	if o.body != nil {
		item.Body = bytes.NewReader(o.body)
	}
	if o.hasVer {
		v := o.version
		item.Version, item.VersionType = &v, ix.cfg.VersionType
	}
	if err := ix.bi.Add(ctx, item); err != nil {
		o.outcome = outcomeUnsent
		return fmt.Errorf("queueing bulk item: %w", err)
	}
	return nil
}

func (ix *Indexer) flushBulk(ctx context.Context) error {
	if err := ix.bi.Flush(ctx); err != nil {
		return fmt.Errorf("flushing bulk requests: %w", err)
	}
	clear(ix.inflight)
	ix.unsent = 0
	return nil
}

func (ix *Indexer) resubmitPending(ctx context.Context) error {
	if !ix.resubmit {
		return nil
	}
	for _, o := range ix.cycle {
		switch o.outcome {
		case outcomeUnsent, outcomeRetry, outcomeBusy, outcomeUnavailable, outcomeFatal:
			if err := ix.submit(ctx, o); err != nil {
				return err
			}
		}
	}
	ix.resubmit = false
	return nil
}

// Flush sends everything queued and waits for every item's result.
// Retryable rejections are retried here (backoff with jitter, at most
// MaxRetries times per item, then dead-lettered); so are whole requests
// the server's thread pool refused (429 es_rejected_execution_exception,
// Elasticsearch 8 under write load), kept after MaxRetries instead of
// dead-lettered; rejected items are dead-lettered. When the server as a
// whole is unreachable or overloaded (a transport error, HTTP
// 502/503/504 or another 429 for the whole request) Flush
// returns an error wrapping connectors.ErrRetriable and keeps the items:
// the next Flush sends them again.
func (ix *Indexer) Flush(ctx context.Context) error {
	if err := ix.resubmitPending(ctx); err != nil {
		return err
	}
	backoff := connectors.Backoff{Initial: ix.cfg.RetryInitial, Max: ix.cfg.RetryMax, Factor: 2}
	for round := 0; ; round++ {
		if err := ix.flushBulk(ctx); err != nil {
			ix.resubmit = true
			return err
		}
		again, unavailable, last := ix.settle()
		if errors.Is(last, ErrRefused) {
			ix.cycle = again
			ix.resubmit = true
			return last
		}
		if len(again) == 0 {
			ix.cycle = ix.cycle[:0]
			clear(ix.latest)
			return nil
		}
		ix.cycle = again
		if unavailable {
			ix.resubmit = true
			return fmt.Errorf("%w: %d documents not indexed yet: %v", connectors.ErrRetriable, len(again), last)
		}
		ix.stats.retried.Add(uint64(len(again)))
		for _, o := range again {
			if o.outcome == outcomeBusy {
				ix.stats.busy.Add(1)
			}
		}
		if ix.m != nil {
			ix.m.Retries.Add(float64(len(again)))
		}
		ix.log.Info("retrying rejected bulk items", zap.Int("items", len(again)), zap.Int("round", round+1), zap.Error(last))
		t := time.NewTimer(backoff.Delay(round))
		select {
		case <-ctx.Done():
			t.Stop()
			ix.resubmit = true
			return ctx.Err()
		case <-t.C:
		}
		for _, o := range again {
			if err := ix.submit(ctx, o); err != nil {
				ix.resubmit = true
				return err
			}
		}
	}
}

// settle reads the outcome of every op of the cycle: stored ones are done,
// rejected ones dead-lettered, superseded ones (a newer action on the same
// document exists) dropped; it returns the ops to send again.
func (ix *Indexer) settle() (again []*op, unavailable bool, last error) {
	var fatal error
	for _, o := range ix.cycle {
		switch o.outcome {
		case outcomeDone:
			ix.stats.stored.Add(1)
			continue
		case outcomeRejected:
			ix.dead(o.rec, o.err)
			continue
		case outcomePending, outcomeUnsent:
			// No result: send it again.
			o.outcome, o.err = outcomeUnavailable, errors.New("bulk item got no result")
		}
		if o.key != "" && ix.latest[o.key] != o {
			continue // superseded by a newer action on the same document
		}
		if o.outcome == outcomeFatal {
			fatal = o.err
		}
		last = o.err
		if o.outcome == outcomeUnavailable || o.outcome == outcomeFatal {
			unavailable = true
		} else {
			o.attempts++
			switch {
			case o.attempts <= ix.cfg.MaxRetries:
			case o.outcome == outcomeBusy:
				// The server kept refusing whole requests: overloaded,
				// not this document's fault. Keep it for the next Flush.
				o.attempts = 0
				unavailable = true
			default:
				ix.dead(o.rec, fmt.Errorf("gave up after %d retries: %w", ix.cfg.MaxRetries, o.err))
				continue
			}
		}
		again = append(again, o)
	}
	if fatal != nil {
		last = fatal
	}
	return again, unavailable, last
}

func (ix *Indexer) dead(r *kgo.Record, err error) {
	ix.stats.dead.Add(1)
	if ix.m != nil {
		ix.m.Error("index")
	}
	ix.deadLetter(r, err)
}

// Close stops the bulk workers; it does not flush (call Flush first).
func (ix *Indexer) Close(ctx context.Context) error {
	err := ix.bi.Close(ctx)
	if t, ok := ix.pt.base.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
	return err
}

// requestStatus matches esutil's error for a failed bulk request:
// "flush: [429 Too Many Requests] ...".
var requestStatus = regexp.MustCompile(`^flush: \[(\d{3})`)

// requestErrorType is error.type of a failed bulk request's JSON body
// ("" when there is none).
func requestErrorType(err error) string {
	msg := err.Error()
	i := strings.IndexByte(msg, '{')
	if i < 0 {
		return ""
	}
	var body struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(msg[i:]), &body) != nil {
		return ""
	}
	return body.Error.Type
}

// classify decides what a failed item needs. err != nil: the whole bulk
// request failed; otherwise res is the item's result.
func classify(o *op, res esutil.BulkIndexerResponseItem, err error) (int, error) {
	if err != nil {
		m := requestStatus.FindStringSubmatch(err.Error())
		if m == nil { // no HTTP answer: connection refused, reset, timeout
			return outcomeUnavailable, fmt.Errorf("bulk request: %w", err)
		}
		st, _ := strconv.Atoi(m[1])
		switch {
		case st == 429 && requestErrorType(err) == "es_rejected_execution_exception":
			// The server's own thread pool is full (Elasticsearch 8
			// coordinates bulks on the write pool and rejects whole
			// requests where 7.x rejected items): retried here like a
			// rejected item.
			return outcomeBusy, fmt.Errorf("bulk request: %w", err)
		case st == 429 || st == 502 || st == 503 || st == 504:
			return outcomeUnavailable, fmt.Errorf("bulk request: %w", err)
		case st >= 500:
			return outcomeRetry, fmt.Errorf("bulk request: %w", err)
		case st == 401 || st == 403 || st == 404 || st == 405:
			return outcomeFatal, fmt.Errorf("%w: bulk request refused (check urls and credentials): %w", ErrRefused, err)
		}
		return outcomeRejected, fmt.Errorf("bulk request refused: %w", err)
	}
	ie := &ItemError{Index: o.index, ID: o.id, Action: o.action, Status: res.Status,
		Type: res.Error.Type, Reason: res.Error.Reason}
	if res.Error.Cause.Type != "" {
		ie.Cause = res.Error.Cause.Type + ": " + res.Error.Cause.Reason
	}
	if ie.ID == "" {
		ie.ID = res.DocumentID
	}
	switch {
	case res.Status == 409 && res.Error.Type == "version_conflict_engine_exception" && (o.hasVer || (o.action == "create" && o.id != "")):
		// External versioning: the server holds this or a newer version.
		// create with an id: the document exists (a re-delivery).
		return outcomeDone, nil
	case o.action == "delete" && res.Status == 404:
		return outcomeDone, nil // already deleted (or never indexed)
	case res.Status == 429 || res.Error.Type == "es_rejected_execution_exception" ||
		res.Error.Type == "rejected_execution_exception" || res.Error.Type == "circuit_breaking_exception":
		return outcomeRetry, ie
	case res.Status >= 500:
		return outcomeRetry, ie
	}
	return outcomeRejected, ie
}

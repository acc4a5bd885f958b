package connectors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// PushSource is a source that receives data rather than reading it (an
// HTTP endpoint, a syslog listener): the outside world decides when
// records arrive, so the source hands them to the runtime as they come
// instead of waiting to be polled. Push wraps it into a Source, so the
// runtime runs it like any other: the runtime's producer, retries, dead
// letters, metrics and a pipeline's transforms apply to pushed records.
//
// Contract:
//   - Open starts receiving (binds listeners) and keeps p; from then on
//     the source hands what it receives to p.Push or p.TryPush, from any
//     number of goroutines. Open must return promptly; a failed Open
//     releases what it bound.
//   - Close stops receiving (closes listeners and connections) and
//     returns once no Push or TryPush call of the source is running and
//     no goroutine of it is left waiting for a batch's fate. While Close
//     runs, the runtime keeps producing what was pushed, so a caller
//     waiting for a batch's fate (an HTTP request waiting to be
//     answered) gets it. Close is called once, after a successful Open.
//   - Records: as for Poll, the pushed records and every byte slice in
//     them belong to the runtime once Push returns. Pushed records carry
//     no source position (SourcePartition is ignored): a push source
//     cannot replay what it received, so its delivery guarantee is the
//     one its protocol gives (an HTTP client retries a request that was
//     not answered 200; syslog has no acknowledgements).
type PushSource interface {
	Open(ctx context.Context, sc SourceContext, p *Pusher) error
	Close() error
}

// PushOptions bound what a push source may have in the runtime at once:
// records pushed whose fate is not known yet.
type PushOptions struct {
	// MaxRecords and MaxBytes (key+value bytes as pushed) bound the
	// records in flight (defaults 100,000 and 64 MiB). A batch is always
	// admitted when nothing is in flight, so one larger than the bounds
	// still gets through on an idle source.
	MaxRecords int
	MaxBytes   int64
	// Linger is the producer's linger (0: the runtime's default).
	Linger time.Duration
}

// PushResult is the fate of a pushed batch, given to its done callback
// once every record's fate is known. Exactly one of the counts holds
// each record.
type PushResult struct {
	// Stored records were acknowledged by the broker (acks=all) in their
	// topic, or in the dead-letter topic a transform routed them to.
	Stored int
	// Dropped records were dropped by a transform and never produced.
	Dropped int
	// DeadLettered records were refused by the broker for good and are
	// stored in the connector's dead-letter topic instead.
	DeadLettered int
	// Failed records may not be stored: the task stopped before the
	// broker acknowledged them, or the dead-letter write failed too.
	Failed int
	// Err is the first refusal or failure (nil when every record was
	// stored or dropped).
	Err error
}

// ErrPushFull is returned by TryPush when the batch does not fit in the
// source's bound of records in flight.
var ErrPushFull = errors.New("push buffer full")

// Pusher is how a push source hands records to the runtime. Its methods
// are safe for concurrent use.
type Pusher struct {
	s *pushSource
}

// Push hands recs to the runtime as one batch. It blocks while the batch
// does not fit in the bound of records in flight (backpressure: a TCP
// connection is then not read) until it fits, ctx is done (ctx's error)
// or the source is stopping (an error wrapping ErrStopped); on an error
// nothing of recs was taken. done, if not nil, is called once with the
// batch's fate, from another goroutine; it must not block. An empty
// batch calls done at once.
func (p *Pusher) Push(ctx context.Context, recs []SourceRecord, done func(PushResult)) error {
	return p.s.push(ctx, recs, done, true)
}

// TryPush is Push without waiting: a batch that does not fit is refused
// with ErrPushFull (a UDP datagram is then dropped, an HTTP request
// answered 429) and nothing of it is taken.
func (p *Pusher) TryPush(recs []SourceRecord, done func(PushResult)) error {
	return p.s.push(context.Background(), recs, done, false)
}

// Ping checks that the broker answers (for a health endpoint).
func (p *Pusher) Ping(ctx context.Context) error {
	t := p.s.task
	if t == nil {
		return fmt.Errorf("%w: push source not running", ErrStopped)
	}
	return t.cl.Ping(ctx)
}

// BrokerDown reports whether connecting to the broker failed in the last
// ten seconds without a success since (to tell an overloaded runtime
// from an unreachable broker).
func (p *Pusher) BrokerDown() bool {
	t := p.s.task
	return t != nil && t.brokerDown()
}

// Push returns a Source that runs ps: the runtime's Poll takes what ps
// pushed. At shutdown the runtime closes ps and keeps producing until
// every pushed record's fate is known (bounded by
// SourceOptions.StopTimeout); records still unsettled then are Failed.
func Push(ps PushSource, o PushOptions) Source {
	if o.MaxRecords <= 0 {
		o.MaxRecords = 100_000
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 64 << 20
	}
	s := &pushSource{ps: ps, o: o, ready: make(chan struct{}, 1), room: make(chan struct{}),
		batches: map[*pushBatch]struct{}{}, settledAll: make(chan struct{})}
	s.p = &Pusher{s: s}
	return s
}

// Pushed is the Source that Push makes of a push source P, with P at
// hand: a kind's NewSource returns it (connectors/http, connectors/syslog),
// so whoever holds the Source reaches the endpoint it runs (its listen
// addresses) through Server.
type Pushed[P PushSource] struct {
	Source
	srv P
}

// NewPushed is Push(ps, o) keeping ps.
func NewPushed[P PushSource](ps P, o PushOptions) *Pushed[P] {
	return &Pushed[P]{Source: Push(ps, o), srv: ps}
}

// Unwrap implements Unwrapper.
func (s *Pushed[P]) Unwrap() Source { return s.Source }

// Server is the push source the Source runs.
func (s *Pushed[P]) Server() P { return s.srv }

// pushSource is the Source around a PushSource: pushed batches wait in
// queue until Poll takes them.
//
// The work per record is kept out of the locks: a Push copies its
// records before it takes mu, once, to admit and queue the batch; Poll
// takes the queued batches under mu and copies their records after; a
// record's fate is counted in its batch with atomics, and only the last
// one of a batch takes mu (to release the batch's room).
type pushSource struct {
	ps   PushSource
	o    PushOptions
	p    *Pusher
	task *sourceTask // set by the runtime before Open
	m    *Metrics

	mu         sync.Mutex
	queue      [][]SourceRecord // pushed batches not polled yet
	spare      [][]SourceRecord // Poll's last queue, reused
	ready      chan struct{}    // capacity 1: queue is not empty
	room       chan struct{}    // closed (and replaced) when records settle while waiting is set
	waiting    bool
	inRecs     int
	inBytes    int64
	batches    map[*pushBatch]struct{} // unsettled batches with a done callback
	stopping   bool                    // Close of ps started: no more pushes
	closed     chan struct{}           // closed once ps.Close returned
	closeErr   error
	settledAll chan struct{} // closed once stopping, ps closed and nothing is unsettled
	settledSet bool
	released   bool // Close released every batch's room
}

// pushBatch tracks the records of one Push. Fates are counted with
// atomics (settle); final is guarded by the source's mu.
type pushBatch struct {
	s    *pushSource
	n    int
	size int64
	done func(PushResult)

	left         atomic.Int64 // records whose fate is not counted yet
	stored       atomic.Int64
	dropped      atomic.Int64
	deadLettered atomic.Int64
	err          atomic.Pointer[error] // the first refusal or failure
	final        bool                  // the batch's result is given (mu)
}

// result is b's fate: the records not stored, dropped or dead-lettered
// (so far) are Failed.
func (b *pushBatch) result() PushResult {
	r := PushResult{Stored: int(b.stored.Load()), Dropped: int(b.dropped.Load()), DeadLettered: int(b.deadLettered.Load())}
	r.Failed = b.n - r.Stored - r.Dropped - r.DeadLettered
	if e := b.err.Load(); e != nil {
		r.Err = *e
	}
	return r
}

// fate of one pushed record.
type fate int

const (
	fateStored fate = iota
	fateDropped
	fateDeadLettered
	fateFailed
)

// Drop tells the runtime that r will not be produced because a
// transform dropped it. Wrappers that filter the records Poll returns
// must call it for each record they drop, so a push source learns the
// record's fate; for records of other sources it does nothing.
func (r *SourceRecord) Drop() {
	if r.push != nil {
		r.push.settle(fateDropped, nil)
	}
}

// settle counts one record's fate and, after the batch's last one,
// releases its room and calls done. A fate counted after Close gave the
// batch's result (as Failed) is ignored.
func (b *pushBatch) settle(f fate, err error) {
	if err != nil && b.err.Load() == nil {
		b.err.CompareAndSwap(nil, &err)
	}
	switch f {
	case fateStored:
		b.stored.Add(1)
	case fateDropped:
		b.dropped.Add(1)
	case fateDeadLettered:
		b.deadLettered.Add(1)
	} // Failed: what is none of these
	if b.left.Add(-1) != 0 {
		return
	}
	s := b.s
	s.mu.Lock()
	if b.final {
		s.mu.Unlock()
		return
	}
	res := b.result()
	s.finishLocked(b)
	s.mu.Unlock()
	if b.done != nil {
		b.done(res)
	}
}

// finishLocked releases b's room; s.mu is held.
func (s *pushSource) finishLocked(b *pushBatch) {
	b.final = true
	if b.done != nil {
		delete(s.batches, b)
	}
	if !s.released {
		s.inRecs -= b.n
		s.inBytes -= b.size
	}
	if s.waiting {
		close(s.room)
		s.room = make(chan struct{})
		s.waiting = false
	}
	s.checkSettledLocked()
}

func (s *pushSource) checkSettledLocked() {
	if !s.settledSet && s.closed != nil && s.inRecs == 0 {
		select {
		case <-s.closed:
			s.settledSet = true
			close(s.settledAll)
		default:
		}
	}
}

func (s *pushSource) push(ctx context.Context, recs []SourceRecord, done func(PushResult), wait bool) error {
	if len(recs) == 0 {
		if done != nil {
			done(PushResult{})
		}
		return nil
	}
	var size int64
	b := &pushBatch{s: s, n: len(recs), done: done}
	b.left.Store(int64(len(recs)))
	queued := make([]SourceRecord, len(recs))
	for i := range recs {
		r := &queued[i]
		*r = recs[i]
		size += int64(len(r.Key) + len(r.Value))
		r.SourcePartition, r.Position, r.push = "", nil, b
	}
	b.size = size
	s.mu.Lock()
	for {
		if s.stopping {
			s.mu.Unlock()
			return fmt.Errorf("%w: the source is stopping", ErrStopped)
		}
		if s.inRecs == 0 || (s.inRecs+len(recs) <= s.o.MaxRecords && s.inBytes+size <= s.o.MaxBytes) {
			break
		}
		if !wait {
			s.mu.Unlock()
			s.full()
			return ErrPushFull
		}
		room := s.room
		s.waiting = true
		s.mu.Unlock()
		s.full()
		s.m.Paused.Set(1)
		select {
		case <-room:
			s.m.Paused.Set(0)
		case <-ctx.Done():
			s.m.Paused.Set(0)
			return ctx.Err()
		}
		s.mu.Lock()
	}
	if done != nil {
		s.batches[b] = struct{}{}
	}
	s.inRecs += len(recs)
	s.inBytes += size
	s.queue = append(s.queue, queued)
	s.mu.Unlock()
	clear(recs)
	select {
	case s.ready <- struct{}{}:
	default:
	}
	return nil
}

// full asks the runtime to send what it holds without lingering: the
// source waits for room, so more records will not come to fill a batch.
func (s *pushSource) full() {
	if t := s.task; t != nil && t.flushing.CompareAndSwap(false, true) {
		go func() {
			defer t.flushing.Store(false)
			_ = t.cl.Flush(t.pctx)
		}()
	}
}

// Open implements Source.
func (s *pushSource) Open(ctx context.Context, sc SourceContext, _ map[string][]byte) error {
	s.m = sc.Metrics()
	return s.ps.Open(ctx, sc, s.p)
}

// Poll implements Source: it returns the records pushed so far, waiting
// up to a second for some. Once the source is stopping it ignores ctx
// (the runtime drains with a context of its own) and returns early when
// every pushed record is settled.
func (s *pushSource) Poll(ctx context.Context, buf []SourceRecord) ([]SourceRecord, error) {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			q := s.queue
			s.queue, s.spare = s.spare[:0], nil
			s.mu.Unlock()
			if len(buf) == 0 && len(q) == 1 {
				buf = q[0] // the batch's own copy: no second one
			} else {
				for _, recs := range q {
					buf = append(buf, recs...)
				}
			}
			clear(q)
			s.mu.Lock()
			if s.spare == nil {
				s.spare = q[:0]
			}
			s.mu.Unlock()
			return buf, nil
		}
		stopping := s.stopping
		s.mu.Unlock()
		done := ctx.Done()
		if stopping {
			done = nil
		}
		select {
		case <-s.ready:
		case <-done:
			return buf, nil
		case <-s.settledAll:
			return buf, nil
		case <-t.C:
			return buf, nil
		}
	}
}

// stop starts closing ps (no more pushes are taken); the runtime then
// drains until drained reports true.
func (s *pushSource) stop() {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return
	}
	s.stopping = true
	s.closed = make(chan struct{})
	if s.waiting { // wake the pushes waiting for room: they fail now
		close(s.room)
		s.room = make(chan struct{})
		s.waiting = false
	}
	s.mu.Unlock()
	go func() {
		err := s.ps.Close()
		s.mu.Lock()
		s.closeErr = err
		close(s.closed)
		s.checkSettledLocked()
		s.mu.Unlock()
		select { // wake a Poll waiting for records
		case s.ready <- struct{}{}:
		default:
		}
	}()
}

// drained reports whether ps is closed and every pushed record settled.
func (s *pushSource) drained() bool {
	select {
	case <-s.settledAll:
		return true
	default:
		return false
	}
}

// Close implements Source: records still unsettled are Failed, then it
// waits for ps to close.
func (s *pushSource) Close() error {
	s.stop()
	s.mu.Lock()
	left := make([]*pushBatch, 0, len(s.batches))
	for b := range s.batches {
		left = append(left, b)
	}
	clear(s.queue)
	s.queue = s.queue[:0]
	s.inRecs, s.inBytes, s.released = 0, 0, true // batches without a callback are released too
	results := make([]PushResult, len(left))
	for i, b := range left {
		stopped := fmt.Errorf("%w before the broker acknowledged the records", ErrStopped)
		b.err.CompareAndSwap(nil, &stopped)
		results[i] = b.result()
		s.finishLocked(b)
	}
	closed := s.closed
	s.mu.Unlock()
	for i, b := range left {
		if b.done != nil {
			b.done(results[i])
		}
	}
	<-closed
	return s.closeErr
}

// Unwrapper is implemented by a Source that wraps another (a pipeline's
// transforms around a connector's source): the runtime looks through it
// for the inner source's capabilities, such as being a push source.
type Unwrapper interface {
	Unwrap() Source
}

// pushSourceOf finds the push source inside src, if any.
func pushSourceOf(src Source) *pushSource {
	for src != nil {
		if ps, ok := src.(*pushSource); ok {
			return ps
		}
		u, ok := src.(Unwrapper)
		if !ok {
			return nil
		}
		src = u.Unwrap()
	}
	return nil
}

package txncoord

import (
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a transaction's state, Kafka's TransactionState (the values
// are those of the state topic's records; names as DescribeTransactions
// and ListTransactions show them).
type State int8

const (
	Empty State = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	Dead
	PrepareEpochFence
)

func (s State) String() string { return kmsg.TransactionState(s).String() }

// ParseState returns the state named name (Kafka's names).
func ParseState(name string) (State, bool) {
	for s := Empty; s <= PrepareEpochFence; s++ {
		if s.String() == name {
			return s, true
		}
	}
	return 0, false
}

// retryBackoff spaces the retries of a failed Complete* write.
const retryBackoff = 100 * time.Millisecond

// txn is one transactional id this coordinator serves.
type txn struct {
	id        string
	partition int32
	meta
	// lastProducerID and lastEpoch are the producer id and epoch before
	// the last bump (KIP-360: a producer retrying InitProducerId with
	// them gets the current ones). Kept in memory only, as Kafka does
	// with version-0 records.
	lastProducerID int64
	lastEpoch      int16
	// pending: a write of this id's next state is in flight; requests
	// meanwhile get CONCURRENT_TRANSACTIONS.
	pending bool
	// failedFence: a fencing abort's PrepareAbort write failed; the
	// epoch was bumped in memory already and is not bumped again.
	failedFence bool
	// completeAt: the Complete* write failed; retry it then.
	completeAt time.Time
}

// Write is a batch of records the Machine needs appended to one
// __transaction_state partition. The driver appends them (Writes of one
// partition in the order taken, possibly several in one batch) and then
// calls Done with the result, under the Machine's serialization.
type Write struct {
	Partition int32
	Records   []Record
	done      func(now time.Time, err error)
}

// Done reports the append's outcome to the Machine.
func (w *Write) Done(now time.Time, err error) { w.done(now, err) }

// Markers is a transaction's markers to write: one control batch
// (commit or abort, producer id and epoch, coordinator epoch) on each of
// Partitions. The driver writes them to every partition's leader,
// retrying until all are written, then calls Machine.MarkersWritten.
type Markers struct {
	TransactionalID  string
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	Partitions       []TP
}

// InitResult is InitProducerId's answer.
type InitResult struct {
	ProducerID int64
	Epoch      int16
	Err        *kerr.Error
}

// Machine holds every transactional id this coordinator serves. It is not
// safe for concurrent use: the driver serializes calls. Every method
// takes the current time; none does I/O. Replies go to callbacks, possibly
// later (after a Write); callbacks must not block or call the Machine.
type Machine struct {
	cfg     Config
	newPID  func() (int64, error)
	txns    map[string]*txn
	loaded  map[int32]int32 // partition -> coordinator epoch
	loading map[int32]bool
	nparts  int32
	writes  []*Write
	markers []Markers

	lastAbortCheck, lastExpireCheck time.Time
}

// NewMachine returns an empty Machine for a state topic of nparts
// partitions; newPID allocates producer ids (never reused).
func NewMachine(cfg Config, nparts int32, newPID func() (int64, error)) *Machine {
	return &Machine{cfg: cfg, newPID: newPID, txns: map[string]*txn{}, loaded: map[int32]int32{}, loading: map[int32]bool{}, nparts: nparts}
}

// Partitions is the partition count of the state topic.
func (m *Machine) Partitions() int32 { return m.nparts }

// TakeWrites returns the writes queued since the last call, in order.
func (m *Machine) TakeWrites() []*Write {
	w := m.writes
	m.writes = nil
	return w
}

// TakeMarkers returns the marker jobs queued since the last call.
func (m *Machine) TakeMarkers() []Markers {
	mk := m.markers
	m.markers = nil
	return mk
}

func (m *Machine) write(t *txn, rec Record, done func(now time.Time, err error)) {
	t.pending = true
	m.writes = append(m.writes, &Write{Partition: t.partition, Records: []Record{rec}, done: func(now time.Time, err error) {
		if m.txns[t.id] != t {
			// Unloaded (and maybe reloaded) meanwhile.
			done(now, kerr.NotCoordinator)
			return
		}
		t.pending = false
		done(now, err)
	}})
}

// writeError maps a failed state-topic append to the error a client gets,
// as Kafka's TransactionStateManager does.
func writeError(err error) *kerr.Error {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.CoordinatorNotAvailable
	}
	switch ke {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut, kerr.CoordinatorNotAvailable:
		return kerr.CoordinatorNotAvailable
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError, kerr.NotCoordinator:
		return kerr.NotCoordinator
	}
	return kerr.UnknownServerError
}

// CoordinatorError is the error a request for transactionalID gets here:
// nil when this Machine serves it, else INVALID_REQUEST (empty id),
// COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR.
func (m *Machine) CoordinatorError(transactionalID string) *kerr.Error {
	if transactionalID == "" {
		return kerr.InvalidRequest
	}
	p := PartitionFor(transactionalID, m.nparts)
	if m.loading[p] {
		return kerr.CoordinatorLoadInProgress
	}
	if _, ok := m.loaded[p]; !ok {
		return kerr.NotCoordinator
	}
	return nil
}

func epochExhausted(e int16) bool { return e >= maxEpoch-1 }

// InitProducerID runs InitProducerId for a transactional id (Kafka's
// TransactionCoordinator.handleInitProducerId, transactions version 1).
// expectPID/expectEpoch are the producer's current id and epoch (KIP-360,
// v3+), -1/-1 for none.
func (m *Machine) InitProducerID(now time.Time, id string, timeoutMs int32, expectPID int64, expectEpoch int16, reply func(InitResult)) {
	fail := func(e *kerr.Error) { reply(InitResult{ProducerID: -1, Epoch: -1, Err: e}) }
	if e := m.CoordinatorError(id); e != nil {
		fail(e)
		return
	}
	if timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > m.cfg.MaxTimeout {
		fail(kerr.InvalidTransactionTimeout)
		return
	}
	t := m.txns[id]
	if t == nil {
		pid, err := m.newPID()
		if err != nil {
			fail(kerr.UnknownServerError)
			return
		}
		id = strings.Clone(id) // requests may alias connection buffers
		t = &txn{id: id, partition: PartitionFor(id, m.nparts), lastProducerID: -1, lastEpoch: -1,
			meta: meta{producerID: pid, epoch: -1, timeoutMs: timeoutMs, state: Empty, start: -1, lastUpdate: now.UnixMilli()}}
		m.txns[id] = t
	}
	expected := expectPID >= 0
	switch {
	case t.pending:
		fail(kerr.ConcurrentTransactions)
		return
	case expected && t.epoch != -1 && expectPID != t.producerID && (expectPID != t.lastProducerID || !epochExhausted(expectEpoch)):
		fail(kerr.ProducerFenced)
		return
	}
	switch t.state {
	case PrepareCommit, PrepareAbort:
		fail(kerr.ConcurrentTransactions)
	case Ongoing:
		// Abort it first, fencing the epoch; the producer retries
		// (CONCURRENT_TRANSACTIONS) and gets a second bump then.
		m.endTxn(t, now, false, true, func(e *kerr.Error) {
			if e == nil {
				e = kerr.ConcurrentTransactions
			}
			fail(e)
		})
	case Empty, CompleteCommit, CompleteAbort:
		next := t.meta
		next.state, next.parts, next.start, next.lastUpdate, next.timeoutMs = Empty, nil, -1, now.UnixMilli(), timeoutMs
		lastPID, lastEpoch := t.lastProducerID, t.lastEpoch
		if epochExhausted(t.epoch) && (!expected || expectEpoch == t.epoch) {
			pid, err := m.newPID()
			if err != nil {
				fail(kerr.UnknownServerError)
				return
			}
			lastPID, lastEpoch = t.producerID, -1
			if expected {
				lastEpoch = t.epoch
			}
			next.producerID, next.epoch = pid, 0
		} else {
			switch {
			case !expected:
				next.epoch, lastEpoch = t.epoch+1, -1
			case t.epoch == -1 || expectEpoch == t.epoch:
				next.epoch, lastEpoch = t.epoch+1, t.epoch
			case expectEpoch == t.lastEpoch:
				// A retry of the bump that answered already.
			default:
				fail(kerr.ProducerFenced)
				return
			}
		}
		m.write(t, stateRecord(t.id, next), func(_ time.Time, err error) {
			if err != nil {
				fail(writeError(err))
				return
			}
			t.meta, t.lastProducerID, t.lastEpoch = next, lastPID, lastEpoch
			reply(InitResult{ProducerID: next.producerID, Epoch: next.epoch})
		})
	default:
		fail(kerr.ConcurrentTransactions)
	}
}

// check is the common validation of a request naming a producer id and
// epoch for a transactional id: the txn, or the error to answer.
func (m *Machine) check(id string, pid int64, epoch int16) (*txn, *kerr.Error) {
	if e := m.CoordinatorError(id); e != nil {
		return nil, e
	}
	t := m.txns[id]
	switch {
	case t == nil || t.producerID != pid:
		return nil, kerr.InvalidProducerIDMapping
	case t.epoch != epoch:
		return nil, kerr.ProducerFenced
	}
	return t, nil
}

// AddPartitions adds partitions to the producer's transaction, starting
// it (AddPartitionsToTxn, and AddOffsetsToTxn with the group's offsets
// partition). reply gets nil once the new state is written.
func (m *Machine) AddPartitions(now time.Time, id string, pid int64, epoch int16, tps []TP, reply func(*kerr.Error)) {
	t, e := m.check(id, pid, epoch)
	if e != nil {
		reply(e)
		return
	}
	tps = normalize(append([]TP(nil), tps...))
	switch {
	case t.pending:
		reply(kerr.ConcurrentTransactions)
		return
	case t.state == PrepareCommit || t.state == PrepareAbort:
		reply(kerr.ConcurrentTransactions)
		return
	case t.state == Dead || t.state == PrepareEpochFence:
		reply(kerr.ConcurrentTransactions)
		return
	case t.state == Ongoing:
		all := true
		for _, tp := range tps {
			all = all && contains(t.parts, tp)
		}
		if all {
			reply(nil)
			return
		}
	}
	next := t.meta
	if t.state != Ongoing {
		next.start = now.UnixMilli()
	}
	next.state, next.parts, next.lastUpdate = Ongoing, union(t.parts, tps), now.UnixMilli()
	m.write(t, stateRecord(t.id, next), func(_ time.Time, err error) {
		if err != nil {
			reply(writeError(err))
			return
		}
		t.meta = next
		reply(nil)
	})
}

// Verify answers AddPartitionsToTxn's verifyOnly form (KIP-890 part 1, a
// partition leader asking before it appends a transactional batch): per
// partition nil when it is in the producer's ongoing transaction,
// TRANSACTION_ABORTABLE when not; or one error for all.
func (m *Machine) Verify(id string, pid int64, epoch int16, tps []TP) (map[TP]*kerr.Error, *kerr.Error) {
	t, e := m.check(id, pid, epoch)
	if e != nil {
		return nil, e
	}
	if t.state == PrepareCommit || t.state == PrepareAbort {
		return nil, kerr.ConcurrentTransactions
	}
	out := make(map[TP]*kerr.Error, len(tps))
	for _, tp := range tps {
		if !contains(t.parts, tp) {
			out[tp] = kerr.TransactionAbortable
		} else {
			out[tp] = nil
		}
	}
	return out, nil
}

// EndTxn commits or aborts the producer's transaction (EndTxn from a
// client): reply gets nil once PrepareCommit/PrepareAbort is written; the
// markers follow (TakeMarkers), then Complete*.
func (m *Machine) EndTxn(now time.Time, id string, pid int64, epoch int16, commit bool, reply func(*kerr.Error)) {
	t, e := m.check(id, pid, epoch)
	if e != nil {
		reply(e)
		return
	}
	if t.pending {
		reply(kerr.ConcurrentTransactions)
		return
	}
	switch t.state {
	case Ongoing:
		m.endTxn(t, now, commit, false, reply)
	case CompleteCommit:
		reply(ifElse(commit, nil, kerr.InvalidTxnState)) // a retry of a commit that completed
	case CompleteAbort:
		reply(ifElse(!commit, nil, kerr.InvalidTxnState))
	case PrepareCommit:
		reply(ifElse(commit, kerr.ConcurrentTransactions, kerr.InvalidTxnState))
	case PrepareAbort:
		reply(ifElse(!commit, kerr.ConcurrentTransactions, kerr.InvalidTxnState))
	default: // Empty: nothing to end
		reply(kerr.InvalidTxnState)
	}
}

func ifElse(c bool, a, b *kerr.Error) *kerr.Error {
	if c {
		return a
	}
	return b
}

// endTxn writes PrepareCommit/PrepareAbort of an ongoing transaction and
// then queues its markers. fence bumps the epoch first (an abort by the
// coordinator: InitProducerId during a transaction, or a timeout), so the
// old producer's requests get PRODUCER_FENCED from now on.
func (m *Machine) endTxn(t *txn, now time.Time, commit, fence bool, reply func(*kerr.Error)) {
	if fence {
		if !t.failedFence && t.epoch < maxEpoch {
			t.epoch++
		}
		t.lastEpoch = -1
	}
	next := t.meta
	next.state = ifState(commit, PrepareCommit, PrepareAbort)
	next.lastUpdate = now.UnixMilli()
	m.write(t, stateRecord(t.id, next), func(_ time.Time, err error) {
		if err != nil {
			if fence {
				t.failedFence = true
			}
			reply(writeError(err))
			return
		}
		t.failedFence = false
		t.meta = next
		reply(nil)
		m.queueMarkers(t)
	})
}

func ifState(c bool, a, b State) State {
	if c {
		return a
	}
	return b
}

func (m *Machine) queueMarkers(t *txn) {
	m.markers = append(m.markers, Markers{
		TransactionalID: t.id, ProducerID: t.producerID, ProducerEpoch: t.epoch,
		Commit: t.state == PrepareCommit, CoordinatorEpoch: m.loaded[t.partition],
		Partitions: append([]TP(nil), t.parts...),
	})
}

// MarkersWritten reports that every marker of mk is written: the
// transaction completes (CompleteCommit/CompleteAbort is written). A job
// that no longer matches the transaction (unloaded, another coordinator
// epoch, already completed) is ignored.
func (m *Machine) MarkersWritten(now time.Time, mk Markers) {
	t := m.txns[mk.TransactionalID]
	if t == nil || t.producerID != mk.ProducerID || t.epoch != mk.ProducerEpoch || t.pending ||
		t.state != ifState(mk.Commit, PrepareCommit, PrepareAbort) || m.loaded[t.partition] != mk.CoordinatorEpoch {
		return
	}
	m.complete(t, now)
}

func (m *Machine) complete(t *txn, now time.Time) {
	next := t.meta
	next.state = ifState(t.state == PrepareCommit, CompleteCommit, CompleteAbort)
	next.parts, next.lastUpdate = nil, now.UnixMilli()
	t.completeAt = time.Time{}
	m.write(t, stateRecord(t.id, next), func(now time.Time, err error) {
		if err != nil {
			if !errors.Is(err, kerr.NotCoordinator) {
				t.completeAt = now.Add(retryBackoff)
			}
			return
		}
		t.meta = next
	})
}

// sortedIDs returns the served transactional ids in order (deterministic
// timers for tests).
func (m *Machine) sortedIDs() []string {
	ids := make([]string, 0, len(m.txns))
	for id := range m.txns {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// NextDeadline is the earliest time Tick has something to do; zero when
// nothing is scheduled.
func (m *Machine) NextDeadline() time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	if len(m.txns) > 0 {
		consider(m.lastAbortCheck.Add(m.cfg.AbortTimedOutInterval))
		consider(m.lastExpireCheck.Add(m.cfg.RemoveExpiredInterval))
	}
	for _, t := range m.txns {
		consider(t.completeAt)
	}
	return next
}

// Tick runs what is due at now: retries of failed Complete* writes,
// every AbortTimedOutInterval the abort of transactions open past their
// timeout (fencing the producer's epoch, as Kafka does), and every
// RemoveExpiredInterval the removal of transactional ids idle past
// IDExpiration.
func (m *Machine) Tick(now time.Time) {
	if m.lastAbortCheck.IsZero() {
		m.lastAbortCheck, m.lastExpireCheck = now, now
	}
	abort := !now.Before(m.lastAbortCheck.Add(m.cfg.AbortTimedOutInterval))
	expire := !now.Before(m.lastExpireCheck.Add(m.cfg.RemoveExpiredInterval))
	if abort {
		m.lastAbortCheck = now
	}
	if expire {
		m.lastExpireCheck = now
	}
	nowMs := now.UnixMilli()
	for _, id := range m.sortedIDs() {
		t := m.txns[id]
		switch {
		case t.pending:
		case !t.completeAt.IsZero():
			if !now.Before(t.completeAt) {
				m.complete(t, now)
			}
		case abort && t.state == Ongoing && t.start+int64(t.timeoutMs) < nowMs:
			m.endTxn(t, now, false, true, func(*kerr.Error) {})
		case expire && (t.state == Empty || t.state == CompleteCommit || t.state == CompleteAbort) &&
			t.lastUpdate <= nowMs-m.cfg.IDExpiration.Milliseconds():
			m.write(t, tombstone(t.id), func(_ time.Time, err error) {
				if err == nil {
					t.state = Dead
					delete(m.txns, t.id)
				}
			})
		}
	}
}

// Unload drops the transactional ids of partition p (it moved away);
// writes in flight answer NOT_COORDINATOR.
func (m *Machine) Unload(p int32) {
	delete(m.loaded, p)
	delete(m.loading, p)
	for id, t := range m.txns {
		if t.partition == p {
			delete(m.txns, id)
		}
	}
}

// Loaded reports whether partition p is served, and its coordinator
// epoch.
func (m *Machine) Loaded(p int32) (int32, bool) {
	e, ok := m.loaded[p]
	return e, ok
}

// Loader replays the records of one partition into the Machine; Finish
// makes the partition served.
type Loader struct {
	m     *Machine
	p     int32
	epoch int32
	metas map[string]*meta
}

// Load starts loading partition p, led in coordinator epoch epoch (the
// partition's leader epoch), dropping what was held for it.
func (m *Machine) Load(p, epoch int32) *Loader {
	m.Unload(p)
	m.loading[p] = true
	return &Loader{m: m, p: p, epoch: epoch, metas: map[string]*meta{}}
}

// Apply replays one record; later records replace earlier ones.
func (l *Loader) Apply(key, value []byte) error {
	id, mt, err := decodeRecord(key, value)
	if err != nil {
		return err
	}
	if mt == nil {
		delete(l.metas, id)
		return nil
	}
	l.metas[strings.Clone(id)] = mt
	return nil
}

// Finish builds the transactional ids from the replayed records, marks
// the partition loaded, and queues the markers of transactions that were
// preparing to commit or abort (the previous coordinator may not have
// written them all).
func (l *Loader) Finish(now time.Time) {
	m := l.m
	for _, id := range sortedKeys(l.metas) {
		mt := l.metas[id]
		if mt.state == Dead || mt.state == PrepareEpochFence {
			continue
		}
		m.txns[id] = &txn{id: id, partition: l.p, meta: *mt, lastProducerID: -1, lastEpoch: -1}
	}
	delete(m.loading, l.p)
	m.loaded[l.p] = l.epoch
	for _, id := range sortedKeys(l.metas) {
		if t := m.txns[id]; t != nil && (t.state == PrepareCommit || t.state == PrepareAbort) {
			m.queueMarkers(t)
		}
	}
}

func sortedKeys[V any](mp map[string]V) []string {
	ks := make([]string, 0, len(mp))
	for k := range mp {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

package txncoord

// Data-driven tests of the Machine (script.Run): testdata/*.txt are
// scripts of commands, each followed by "----" and the output it must
// produce (replies, writes and marker jobs). Regenerate with
// `go test ./broker/txncoord -run TestScripts -rewrite` and review the
// diff.
//
// Commands (key=value arguments):
//
//	config maxtimeout=MS expiration=MS abortcheck=MS expirecheck=MS
//	init id= [timeout=MS] [pid= epoch=]      InitProducerId
//	add id= pid= epoch= parts=t/0,t/1        AddPartitionsToTxn
//	verify id= pid= epoch= parts=t/0         AddPartitionsToTxn verifyOnly
//	end id= pid= epoch= commit=true|false    EndTxn
//	markers-done                             every queued marker job is written
//	describe id=   list [states=a,b] [pids=1,2] [duration=MS]
//	tick ms=N          advance the clock and run timers
//	fail-writes n=N    the next N appends fail (NOT_ENOUGH_REPLICAS)
//	hold-writes / release-writes
//	reload             replay every successful write into a new Machine
//	unload p=N         stop serving partition N
//	pids next=N        the next producer id allocated
//	force-epoch id= epoch=N  set an id's epoch in memory (epoch exhaustion)

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/testkit/script"
)

type harness struct {
	t       *testing.T
	cfg     Config
	m       *Machine
	now     time.Time
	start   time.Time
	out     *strings.Builder
	log     map[int32][]Record
	writes  script.Writes[*Write]
	markers []Markers
	nextPID int64
	epoch   int32
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, now: time.Unix(1_700_000_000, 0), log: map[int32][]Record{}, nextPID: 1000}
	h.start = h.now
	h.writes.Complete = h.complete
	h.cfg = DefaultConfig()
	h.cfg.StateLogPartitions = 2
	h.reset()
	return h
}

func (h *harness) reset() {
	h.m = NewMachine(h.cfg, h.cfg.StateLogPartitions, func() (int64, error) {
		h.nextPID++
		return h.nextPID - 1, nil
	})
	h.epoch++
	for p := int32(0); p < h.cfg.StateLogPartitions; p++ {
		l := h.m.Load(p, h.epoch)
		for _, r := range h.log[p] {
			if err := l.Apply(r.Key, r.Value); err != nil {
				h.t.Fatal(err)
			}
		}
		l.Finish(h.now)
	}
	h.drain()
}

func (h *harness) printf(format string, args ...any) { fmt.Fprintf(h.out, format+"\n", args...) }

func errName(e *kerr.Error) string {
	if e == nil {
		return "NONE"
	}
	return e.Message
}

func (h *harness) ms(t int64) string {
	if t < 0 {
		return strconv.FormatInt(t, 10)
	}
	return "+" + strconv.FormatInt(t-h.start.UnixMilli(), 10)
}

func fmtParts(tps []TP) string {
	var s []string
	for _, tp := range tps {
		s = append(s, fmt.Sprintf("%s/%d", tp.Topic, tp.Partition))
	}
	return "[" + strings.Join(s, " ") + "]"
}

func (h *harness) describeRecord(r Record) string {
	id, mt, err := decodeRecord(r.Key, r.Value)
	if err != nil {
		return "BAD " + err.Error()
	}
	if mt == nil {
		return "-txn " + id
	}
	return fmt.Sprintf("txn %s pid=%d epoch=%d %s timeout=%d parts=%s start=%s update=%s",
		id, mt.producerID, mt.epoch, mt.state, mt.timeoutMs, fmtParts(mt.parts), h.ms(mt.start), h.ms(mt.lastUpdate))
}

// drain completes (or holds) the writes the Machine queued, printing
// them and the marker jobs it queued.
func (h *harness) drain() {
	for {
		ws := h.m.TakeWrites()
		mk := h.m.TakeMarkers()
		for _, j := range mk {
			h.printf("markers %s pid=%d epoch=%d commit=%v cepoch=%d parts=%s", j.TransactionalID, j.ProducerID, j.ProducerEpoch, j.Commit, j.CoordinatorEpoch, fmtParts(j.Partitions))
			h.markers = append(h.markers, j)
		}
		if len(ws) == 0 && len(mk) == 0 {
			return
		}
		for _, w := range ws {
			for _, r := range w.Records {
				h.printf("write p%d: %s", w.Partition, h.describeRecord(r))
			}
			h.writes.Add(w)
		}
	}
}

func (h *harness) complete(w *Write, failed bool) {
	var err error
	if failed {
		err = fmt.Errorf("injected: %w", kerr.NotEnoughReplicas)
		h.printf("write p%d failed", w.Partition)
	} else {
		h.log[w.Partition] = append(h.log[w.Partition], w.Records...)
	}
	w.Done(h.now, err)
}

func parseTPs(list []string) []TP {
	var out []TP
	for _, s := range list {
		t, p, _ := strings.Cut(s, "/")
		n, _ := strconv.Atoi(p)
		out = append(out, TP{t, int32(n)})
	}
	return out
}

func (h *harness) run(pos string, fields []string) string {
	h.out = &strings.Builder{}
	a := script.ParseArgs(fields[1:])
	if h.writes.Command(fields[0], a) {
		h.drain()
		return h.out.String()
	}
	ms := a.Ms
	id, pid, epoch := a["id"], a.Int("pid", -1), int16(a.Int("epoch", -1))
	switch fields[0] {
	case "config":
		h.cfg.MaxTimeout = ms("maxtimeout", h.cfg.MaxTimeout)
		h.cfg.IDExpiration = ms("expiration", h.cfg.IDExpiration)
		h.cfg.AbortTimedOutInterval = ms("abortcheck", h.cfg.AbortTimedOutInterval)
		h.cfg.RemoveExpiredInterval = ms("expirecheck", h.cfg.RemoveExpiredInterval)
		if err := h.cfg.Validate(); err != nil {
			h.printf("error: %v", err)
		}
		h.reset()
	case "pids":
		h.nextPID = a.Int("next", h.nextPID)
	case "force-epoch":
		h.m.txns[id].epoch = epoch
	case "init":
		h.m.InitProducerID(h.now, id, int32(a.Int("timeout", 60000)), pid, epoch, func(r InitResult) {
			h.printf("init %s: %s pid=%d epoch=%d", id, errName(r.Err), r.ProducerID, r.Epoch)
		})
	case "add":
		h.m.AddPartitions(h.now, id, pid, epoch, parseTPs(a.List("parts")), func(e *kerr.Error) {
			h.printf("add %s: %s", id, errName(e))
		})
	case "verify":
		tps := parseTPs(a.List("parts"))
		res, e := h.m.Verify(id, pid, epoch, tps)
		if e != nil {
			h.printf("verify %s: %s", id, errName(e))
			break
		}
		var s []string
		for _, tp := range tps {
			s = append(s, fmt.Sprintf("%s/%d=%s", tp.Topic, tp.Partition, errName(res[tp])))
		}
		h.printf("verify %s: %s", id, strings.Join(s, " "))
	case "end":
		h.m.EndTxn(h.now, id, pid, epoch, a["commit"] == "true", func(e *kerr.Error) {
			h.printf("end %s: %s", id, errName(e))
		})
	case "markers-done":
		mk := h.markers
		h.markers = nil
		for _, j := range mk {
			h.m.MarkersWritten(h.now, j)
		}
	case "describe":
		d := h.m.Describe(id)
		var topics []string
		for _, t := range d.Topics {
			topics = append(topics, fmt.Sprintf("%s%v", t.Topic, t.Partitions))
		}
		h.printf("describe %s: %s state=%s pid=%d epoch=%d timeout=%d start=%s topics=%v", id, errName(kerr.TypedErrorForCode(d.ErrorCode)),
			d.State, d.ProducerID, d.ProducerEpoch, d.TimeoutMillis, h.ms(d.StartTimestamp), topics)
	case "list":
		var pids []int64
		for _, s := range a.List("pids") {
			n, _ := strconv.ParseInt(s, 10, 64)
			pids = append(pids, n)
		}
		l, unknown, e := h.m.List(h.now, ListFilter{States: a.List("states"), ProducerIDs: pids, MinDuration: ms("duration", -time.Millisecond)})
		if e != nil {
			h.printf("list: %s", errName(e))
			break
		}
		var s []string
		for _, x := range l {
			s = append(s, fmt.Sprintf("%s:%d:%s", x.TransactionalID, x.ProducerID, x.TransactionState))
		}
		h.printf("list: [%s] unknown=%v", strings.Join(s, " "), unknown)
	case "tick":
		h.now = h.now.Add(ms("ms", 0))
		h.m.Tick(h.now)
	case "reload":
		h.reset()
	case "unload":
		h.m.Unload(int32(a.Int("p", 0)))
	default:
		h.t.Fatalf("%s: unknown command %q", pos, fields[0])
	}
	h.drain()
	return h.out.String()
}

func TestScripts(t *testing.T) {
	script.Run(t, "testdata/*.txt", func(t *testing.T) func(string, []string) string {
		return newHarness(t).run
	})
}

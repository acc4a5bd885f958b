package group

// Data-driven tests of the Machine (script.Run): testdata/*.txt
// are scripts of commands, each followed by "----" and the output it must
// produce (the replies and writes the command caused). Regenerate the
// expected output with `go test ./broker/group -run TestScripts -rewrite`
// and review the diff.
//
// Commands (key=value arguments):
//
//	config delay=MS minsession=MS maxsize=N retention=MS check=MS maxrecord=N
//	join group= client= [member=] [instance=] [v=5] [session=MS] [rebalance=MS]
//	     [type=consumer] [protocols=range:t1+t2,roundrobin] [as=LABEL]
//	sync group= member= gen= [assign=m1:A,m2:B] [as=LABEL] [protocol=]
//	heartbeat group= member= gen= [instance=]
//	leave group= members=m1,m2 | leave group= member= v=2 | instance via m1@inst
//	commit group= [member=] [gen=-1] offsets=t/0=5,t/1=6 [metadata=N] [missing=t]
//	fetch group= [parts=t/0,t/1]
//	offset-delete group= parts=t/0,t/1
//	describe group=   list [states=a,b]   delete groups=a,b
//	tick ms=N          advance the clock and run timers
//	fail-writes n=N    the next N appends fail
//	hold-writes        keep appends pending until release-writes
//	release-writes
//	reload             replay every successful write into a new Machine
//	unload p=N         stop serving partition N
//	txn-commit group= pid= [epoch=0] [v=4] [member=] [gen=-1] [instance=]
//	     offsets=t/0=5 [metadata=N] [missing=t]      TxnOffsetCommit
//	marker p= pid= commit=true|false   a transaction marker appended to p
//	fetch ... [stable=true]            OffsetFetch with require_stable
//	fail-writes n=N [code=NAME]        the next N appends fail (with a Kafka error)
//	load-start p=N / load-finish       reload p from the log in two steps
//	                                   (commands run while it is loading)

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/testkit/script"
)

type harness struct {
	t       *testing.T
	cfg     Config
	m       *Machine
	now     time.Time
	out     *strings.Builder
	log     map[int32][]logEntry
	failErr error
	loader  *Loader
	writes  script.Writes[*Write]
	ids     int
}

// logEntry is one record of the fake __consumer_offsets log: a record
// (of a transactional batch of pid when pid >= 0) or a marker.
type logEntry struct {
	rec    Record
	pid    int64
	marker bool
	commit bool
}

func (h *harness) replay(l *Loader, p int32) {
	for _, e := range h.log[p] {
		if e.marker {
			l.ApplyMarker(e.pid, e.commit)
			continue
		}
		if err := l.ApplyRecord(e.pid, e.rec.Key, e.rec.Value); err != nil {
			h.t.Fatal(err)
		}
	}
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, now: time.Unix(1_700_000_000, 0), log: map[int32][]logEntry{}}
	h.writes.Complete = h.complete
	h.cfg = DefaultConfig()
	h.cfg.InitialRebalanceDelay = 0
	h.cfg.MinSessionTimeout = 10 * time.Millisecond
	h.cfg.OffsetsTopicPartitions = 2
	h.reset()
	return h
}

func (h *harness) reset() {
	h.cfg.NewMemberID = func(client string) string {
		h.ids++
		return fmt.Sprintf("%s-%d", client, h.ids)
	}
	h.m = NewMachine(h.cfg, h.cfg.OffsetsTopicPartitions)
	for p := int32(0); p < h.cfg.OffsetsTopicPartitions; p++ {
		l := h.m.Load(p)
		h.replay(l, p)
		l.Finish(h.now)
	}
}

func (h *harness) printf(format string, args ...any) { fmt.Fprintf(h.out, format+"\n", args...) }

func code(c int16) string {
	if c == 0 {
		return "NONE"
	}
	return kerr.ErrorForCode(c).(*kerr.Error).Message
}

// drain completes (or holds) the writes the Machine queued, printing them.
func (h *harness) drain() {
	for {
		ws := h.m.TakeWrites()
		if len(ws) == 0 {
			return
		}
		for _, w := range ws {
			if w.ProducerID >= 0 {
				h.printf("write p%d txn pid=%d epoch=%d: %s", w.Partition, w.ProducerID, w.ProducerEpoch, describeRecords(w.Records))
			} else {
				h.printf("write p%d: %s", w.Partition, describeRecords(w.Records))
			}
			h.writes.Add(w)
		}
	}
}

func (h *harness) complete(w *Write, failed bool) {
	var err error
	if failed {
		err = fmt.Errorf("injected append failure")
		if h.failErr != nil {
			err = fmt.Errorf("injected append failure: %w", h.failErr)
		}
		h.printf("write p%d failed", w.Partition)
	} else {
		for _, r := range w.Records {
			h.log[w.Partition] = append(h.log[w.Partition], logEntry{rec: r, pid: w.ProducerID})
		}
	}
	w.Done(h.now, err)
}

func describeRecords(recs []Record) string {
	var parts []string
	for _, r := range recs {
		d, err := decodeRecord(r.Key, r.Value)
		if err != nil {
			parts = append(parts, "BAD "+err.Error())
			continue
		}
		switch {
		case d.isOffset && d.offset == nil:
			parts = append(parts, fmt.Sprintf("-offset %s %s/%d", d.group, d.topic, d.partition))
		case d.isOffset:
			parts = append(parts, fmt.Sprintf("offset %s %s/%d=%d", d.group, d.topic, d.partition, d.offset.Offset))
		case d.meta == nil:
			parts = append(parts, "-group "+d.group)
		default:
			var ms []string
			for _, m := range d.meta.Members {
				ms = append(ms, m.MemberID+"="+string(m.Assignment))
			}
			p := ""
			if d.meta.Protocol != nil {
				p = *d.meta.Protocol
			}
			parts = append(parts, fmt.Sprintf("group %s gen=%d protocol=%s members=[%s]", d.group, d.meta.Generation, p, strings.Join(ms, " ")))
		}
	}
	return strings.Join(parts, "; ")
}

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func tps(list []string) map[string][]int32 {
	out := map[string][]int32{}
	for _, s := range list {
		t, p, _ := strings.Cut(s, "/")
		n, _ := strconv.Atoi(p)
		out[t] = append(out[t], int32(n))
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func (h *harness) run(cmd string, a script.Args) {
	m := h.m
	if cmd == "fail-writes" { // and with which error
		h.failErr = nil
		if name := a["code"]; name != "" {
			h.failErr = errorNamed(name)
		}
	}
	if h.writes.Command(cmd, a) {
		h.drain()
		return
	}
	switch cmd {
	case "config":
		ms := a.Ms
		h.cfg.InitialRebalanceDelay = ms("delay", h.cfg.InitialRebalanceDelay)
		h.cfg.MinSessionTimeout = ms("minsession", h.cfg.MinSessionTimeout)
		h.cfg.OffsetsRetention = ms("retention", h.cfg.OffsetsRetention)
		h.cfg.OffsetsRetentionCheckInterval = ms("check", h.cfg.OffsetsRetentionCheckInterval)
		h.cfg.MaxSize = int(a.Int("maxsize", int64(h.cfg.MaxSize)))
		h.cfg.MaxRecordBytes = int(a.Int("maxrecord", int64(h.cfg.MaxRecordBytes)))
		h.log = map[int32][]logEntry{}
		h.ids = 0
		h.reset()
	case "join":
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = int16(a.Int("v", 5))
		req.Group, req.MemberID, req.InstanceID = a["group"], a["member"], strp(a["instance"])
		req.ProtocolType = "consumer"
		if v, ok := a["type"]; ok {
			req.ProtocolType = v
		}
		req.SessionTimeoutMillis = int32(a.Int("session", 10000))
		req.RebalanceTimeoutMillis = int32(a.Int("rebalance", int64(req.SessionTimeoutMillis)))
		protos := a.List("protocols")
		if protos == nil {
			protos = []string{"range:t"}
		}
		for _, p := range protos {
			name, topics, _ := strings.Cut(p, ":")
			md := kmsg.NewConsumerMemberMetadata()
			if topics != "" {
				md.Topics = strings.Split(topics, "+")
			}
			req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{Name: name, Metadata: md.AppendTo(nil)})
		}
		label := a["as"]
		if label == "" {
			label = a["client"]
		}
		m.Join(h.now, req, a["client"], "/127.0.0.1", func(r *kmsg.JoinGroupResponse) {
			if r.ErrorCode != 0 {
				h.printf("join %s: %s member=%s", label, code(r.ErrorCode), r.MemberID)
				return
			}
			var ms []string
			for _, jm := range r.Members {
				ms = append(ms, jm.MemberID)
			}
			p := ""
			if r.Protocol != nil {
				p = *r.Protocol
			}
			h.printf("join %s: gen=%d member=%s leader=%s protocol=%s members=[%s]", label, r.Generation, r.MemberID, r.LeaderID, p, strings.Join(ms, " "))
		})
	case "sync":
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version = 5
		req.Group, req.MemberID, req.Generation = a["group"], a["member"], int32(a.Int("gen", 0))
		req.InstanceID, req.Protocol = strp(a["instance"]), strp(a["protocol"])
		for _, as := range a.List("assign") {
			id, v, _ := strings.Cut(as, ":")
			if v == "BIG" {
				v = strings.Repeat("x", 2000)
			}
			req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: []byte(v)})
		}
		label := a["as"]
		if label == "" {
			label = a["member"]
		}
		m.Sync(h.now, req, func(r *kmsg.SyncGroupResponse) {
			h.printf("sync %s: %s assignment=%q", label, code(r.ErrorCode), r.MemberAssignment)
		})
	case "heartbeat":
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation, req.InstanceID = a["group"], a["member"], int32(a.Int("gen", 0)), strp(a["instance"])
		h.printf("heartbeat %s: %s", a["member"], code(m.Heartbeat(h.now, req).ErrorCode))
	case "leave":
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version = int16(a.Int("v", 4))
		req.Group, req.MemberID = a["group"], a["member"]
		for _, s := range a.List("members") {
			id, inst, _ := strings.Cut(s, "@")
			req.Members = append(req.Members, kmsg.LeaveGroupRequestMember{MemberID: id, InstanceID: strp(inst)})
		}
		r := m.Leave(h.now, req)
		var ms []string
		for _, rm := range r.Members {
			ms = append(ms, rm.MemberID+"="+code(rm.ErrorCode))
		}
		h.printf("leave: %s [%s]", code(r.ErrorCode), strings.Join(ms, " "))
	case "commit":
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 8
		req.Group, req.MemberID, req.Generation, req.InstanceID = a["group"], a["member"], int32(a.Int("gen", -1)), strp(a["instance"])
		req.Topics = commitOffsets(a)
		missing := a["missing"]
		m.Commit(h.now, req, func(t string, _ int32) bool { return t != missing }, func(r *kmsg.OffsetCommitResponse) {
			var ps []string
			for _, rt := range r.Topics {
				for _, rp := range rt.Partitions {
					ps = append(ps, fmt.Sprintf("%s/%d=%s", rt.Topic, rp.Partition, code(rp.ErrorCode)))
				}
			}
			h.printf("commit %s: %s", a["group"], strings.Join(ps, " "))
		})
	case "fetch":
		var topics []kmsg.OffsetFetchRequestTopic
		if ps := a.List("parts"); ps != nil {
			byT := tps(ps)
			for _, t := range sortedKeys(byT) {
				topics = append(topics, kmsg.OffsetFetchRequestTopic{Topic: t, Partitions: byT[t]})
			}
		}
		got, e := m.FetchOffsets(a["group"], topics, a["stable"] == "true")
		if e != nil {
			h.printf("fetch %s: %s", a["group"], e.Message)
			break
		}
		var ps []string
		for _, rt := range got {
			for _, p := range rt.Partitions {
				if p.ErrorCode != 0 {
					ps = append(ps, fmt.Sprintf("%s/%d=%d:%s", rt.Topic, p.Partition, p.Offset, code(p.ErrorCode)))
					continue
				}
				ps = append(ps, fmt.Sprintf("%s/%d=%d", rt.Topic, p.Partition, p.Offset))
			}
		}
		h.printf("fetch %s: [%s]", a["group"], strings.Join(ps, " "))
	case "offset-delete":
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = a["group"]
		byT := tps(a.List("parts"))
		for _, t := range sortedKeys(byT) {
			rt := kmsg.OffsetDeleteRequestTopic{Topic: t}
			for _, p := range byT[t] {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteRequestTopicPartition{Partition: p})
			}
			req.Topics = append(req.Topics, rt)
		}
		m.DeleteOffsets(h.now, req, func(r *kmsg.OffsetDeleteResponse) {
			var ps []string
			for _, rt := range r.Topics {
				for _, rp := range rt.Partitions {
					ps = append(ps, fmt.Sprintf("%s/%d=%s", rt.Topic, rp.Partition, code(rp.ErrorCode)))
				}
			}
			h.printf("offset-delete %s: %s [%s]", req.Group, code(r.ErrorCode), strings.Join(ps, " "))
		})
	case "describe":
		d := m.Describe(a["group"])
		var ms []string
		for _, dm := range d.Members {
			ms = append(ms, fmt.Sprintf("%s(%s)=%q", dm.MemberID, dm.ClientID, dm.MemberAssignment))
		}
		h.printf("describe %s: %s state=%s type=%s protocol=%s members=[%s]", a["group"], code(d.ErrorCode), d.State, d.ProtocolType, d.Protocol, strings.Join(ms, " "))
	case "list":
		var gs []string
		for _, g := range m.List(a.List("states")) {
			gs = append(gs, g.Group+":"+g.GroupState)
		}
		h.printf("list: [%s]", strings.Join(gs, " "))
	case "delete":
		m.Delete(h.now, a.List("groups"), func(r []kmsg.DeleteGroupsResponseGroup) {
			var gs []string
			for _, g := range r {
				gs = append(gs, g.Group+"="+code(g.ErrorCode))
			}
			h.printf("delete: [%s]", strings.Join(gs, " "))
		})
	case "tick":
		h.now = h.now.Add(time.Duration(a.Int("ms", 0)) * time.Millisecond)
		m.Tick(h.now)
		if next := m.NextDeadline(); !next.IsZero() && !next.After(h.now) {
			h.t.Errorf("after tick, NextDeadline %v is not in the future (%v)", next, h.now)
		}
	case "unload":
		m.Unload(int32(a.Int("p", 0)))
	case "txn-commit":
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version = int16(a.Int("v", 4))
		req.TransactionalID = "tx"
		req.Group, req.MemberID, req.Generation, req.InstanceID = a["group"], a["member"], int32(a.Int("gen", -1)), strp(a["instance"])
		req.ProducerID, req.ProducerEpoch = a.Int("pid", 1), int16(a.Int("epoch", 0))
		for _, ct := range commitOffsets(a) {
			rt := kmsg.TxnOffsetCommitRequestTopic{Topic: ct.Topic}
			for _, cp := range ct.Partitions {
				rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = cp.Partition, cp.Offset, 3, cp.Metadata
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		missing := a["missing"]
		m.TxnCommit(h.now, req, func(t string, _ int32) bool { return t != missing }, func(r *kmsg.TxnOffsetCommitResponse) {
			var ps []string
			for _, rt := range r.Topics {
				for _, rp := range rt.Partitions {
					ps = append(ps, fmt.Sprintf("%s/%d=%s", rt.Topic, rp.Partition, code(rp.ErrorCode)))
				}
			}
			h.printf("txn-commit %s: %s", a["group"], strings.Join(ps, " "))
		})
	case "marker":
		p, pid, commit := int32(a.Int("p", 0)), a.Int("pid", 1), a["commit"] == "true"
		h.log[p] = append(h.log[p], logEntry{pid: pid, marker: true, commit: commit})
		m.TxnMarker(h.now, p, pid, commit)
	case "load-start":
		p := int32(a.Int("p", 0))
		h.loader = m.Load(p)
		h.replay(h.loader, p)
	case "load-finish":
		h.loader.Finish(h.now)
		h.loader = nil
	case "reload":
		h.reset()
		h.printf("reloaded %d records", func() int {
			n := 0
			for _, rs := range h.log {
				n += len(rs)
			}
			return n
		}())
	default:
		h.t.Fatalf("unknown command %q", cmd)
	}
	h.drain()
}

// commitOffsets are a commit's offsets= argument (t/0=5,t/1=6) as
// OffsetCommit topics, in the order given, each partition with
// metadata=N bytes of metadata.
func commitOffsets(a script.Args) []kmsg.OffsetCommitRequestTopic {
	byTopic := map[string][]kmsg.OffsetCommitRequestTopicPartition{}
	var order []string
	for _, s := range a.List("offsets") {
		tp, off, _ := strings.Cut(s, "=")
		t, p, _ := strings.Cut(tp, "/")
		pn, _ := strconv.Atoi(p)
		o, _ := strconv.ParseInt(off, 10, 64)
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = int32(pn), o
		if n := a.Int("metadata", 0); n > 0 {
			rp.Metadata = kmsg.StringPtr(strings.Repeat("m", int(n)))
		}
		if _, ok := byTopic[t]; !ok {
			order = append(order, t)
		}
		byTopic[t] = append(byTopic[t], rp)
	}
	var topics []kmsg.OffsetCommitRequestTopic
	for _, t := range order {
		topics = append(topics, kmsg.OffsetCommitRequestTopic{Topic: t, Partitions: byTopic[t]})
	}
	return topics
}

// errorNamed is the Kafka error with that name (kerr's message).
func errorNamed(name string) error {
	for c := int16(-1); c < 200; c++ {
		if e, ok := kerr.ErrorForCode(c).(*kerr.Error); ok && e.Message == name {
			return e
		}
	}
	panic("no Kafka error named " + name)
}

func TestScripts(t *testing.T) {
	script.Run(t, "testdata/*.txt", func(t *testing.T) func(string, []string) string {
		h := newHarness(t)
		return func(_ string, fields []string) string {
			h.out = &strings.Builder{}
			h.run(fields[0], script.ParseArgs(fields[1:]))
			return h.out.String()
		}
	})
}

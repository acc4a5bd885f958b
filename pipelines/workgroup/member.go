package workgroup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/internal/kafkaclient"
)

// Defaults of Config.
const (
	DefaultSessionTimeout    = 6 * time.Second
	DefaultHeartbeatInterval = 500 * time.Millisecond
	DefaultRebalanceTimeout  = 10 * time.Second
)

// Config configures a worker's membership.
type Config struct {
	// Client connects to the cluster (the pipelines' own settings).
	Client kafkaclient.Options
	// Group is the worker group name: the Kafka group id.
	Group string
	// Worker is this worker's id, unique in the group and stable across
	// restarts; the member's group.instance.id is InstanceID(Worker).
	Worker string
	// SessionTimeout, HeartbeatInterval, RebalanceTimeout: see the
	// Default* constants.
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	RebalanceTimeout  time.Duration
	Logger            *zap.Logger
	// Run is told, after every rebalance, the exact set of singletons
	// this worker runs now (nil when it lost its membership): it stops
	// those no longer in the set, waiting until they have stopped, and
	// starts the new ones. It is called from Run's goroutine only.
	Run func(ids []string, a *Assignment)
}

// InstanceID is the group.instance.id of worker's member.
func InstanceID(worker string) string { return "weir-worker-" + worker }

// Group is one worker's membership of its worker group.
type Group struct {
	cfg  Config
	cl   *kgo.Client
	log  *zap.Logger
	inst string

	mu        sync.Mutex
	pipelines string
	offered   map[string]string
	rejoin    chan struct{}
	last      *Assignment

	// The loop's state (Run's goroutine).
	memberID   string
	generation int32
	owned      []string
	lastOK     time.Time
}

// New returns a Group; nothing is sent until Run.
func New(cfg Config) (*Group, error) {
	if cfg.Group == "" || cfg.Worker == "" {
		return nil, errors.New("worker group: a group name and a worker id are required")
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if cfg.RebalanceTimeout <= 0 {
		cfg.RebalanceTimeout = DefaultRebalanceTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Run == nil {
		cfg.Run = func([]string, *Assignment) {}
	}
	cl, err := kafkaclient.New(cfg.Client, kgo.SessionTimeout(cfg.SessionTimeout))
	if err != nil {
		return nil, fmt.Errorf("worker group %q: %w", cfg.Group, err)
	}
	return &Group{cfg: cfg, cl: cl, inst: InstanceID(cfg.Worker), rejoin: make(chan struct{}, 1),
		log: cfg.Logger.With(zap.String("worker_group", cfg.Group), zap.String("worker", cfg.Worker))}, nil
}

// Update sets what this worker offers (its pipeline hash and its
// singletons with their settings hashes) and rejoins if it changed.
func (g *Group) Update(pipelines string, offered map[string]string) {
	g.mu.Lock()
	same := g.pipelines == pipelines && mapsEqual(g.offered, offered)
	g.pipelines, g.offered = pipelines, offered
	g.mu.Unlock()
	if !same {
		g.requestRejoin()
	}
}

func (g *Group) requestRejoin() {
	select {
	case g.rejoin <- struct{}{}:
	default:
	}
}

// Assignment returns the last assignment received (nil before the first).
func (g *Group) Assignment() *Assignment {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last
}

// errFatal marks errors Run returns instead of retrying.
type errFatal struct{ err error }

func (e errFatal) Error() string { return e.err.Error() }
func (e errFatal) Unwrap() error { return e.err }

// Run takes part in the group until ctx ends (then it stops the
// singletons it runs and leaves the group) or a fatal error: a group of
// another protocol type under the name, another live worker with the
// same id, no authorization.
func (g *Group) Run(ctx context.Context) error {
	defer g.cl.Close()
	if err := g.checkName(ctx); err != nil {
		return err
	}
	backoff := 100 * time.Millisecond
	g.lastOK = time.Now()
	for ctx.Err() == nil {
		err := g.joinAndSync(ctx)
		if err == nil {
			backoff = 100 * time.Millisecond
			err = g.heartbeat(ctx)
		}
		if ctx.Err() != nil {
			break
		}
		var fe errFatal
		if errors.As(err, &fe) {
			g.setOwned(nil, nil)
			return fe.err
		}
		if err != nil && !errors.Is(err, errRejoin) {
			g.log.Warn("worker group: retrying", zap.Error(err))
			g.checkLapse()
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
		}
	}
	g.setOwned(nil, nil)
	g.leave()
	return nil
}

var errRejoin = errors.New("rejoin")

// checkName refuses a group name under which offsets are committed: a
// consumer group's, even one with no member now (the coordinator would
// let the worker group take over an empty group of another protocol
// type, and the consumers would then be refused when they come back).
// A worker group never commits offsets. Other errors are left to
// JoinGroup.
func (g *Group) checkName(ctx context.Context) error {
	fctx, cancel := context.WithTimeout(ctx, g.cfg.RebalanceTimeout)
	defer cancel()
	offs, err := kadm.NewClient(g.cl).FetchOffsets(fctx, g.cfg.Group)
	if err != nil || offs.Error() != nil {
		return nil
	}
	var topics []string
	for _, t := range offs.Sorted() {
		if t.At >= 0 && !slices.Contains(topics, t.Topic) {
			topics = append(topics, t.Topic)
		}
	}
	if len(topics) > 0 {
		return fmt.Errorf("worker group %q: a consumer group of that name has committed offsets (topics %s); choose another worker group name", g.cfg.Group, strings.Join(topics, ", "))
	}
	return nil
}

// checkLapse stops the singletons when the member has not been
// confirmed by the coordinator for two thirds of the session timeout:
// by then the coordinator may be about to give them to another worker.
func (g *Group) checkLapse() {
	if len(g.owned) > 0 && time.Since(g.lastOK) > 2*g.cfg.SessionTimeout/3 {
		g.log.Warn("worker group: no contact with the coordinator; stopping the singletons this worker runs",
			zap.Strings("singletons", g.owned), zap.Duration("since", time.Since(g.lastOK)))
		g.setOwned(nil, nil)
	}
}

func (g *Group) setOwned(ids []string, a *Assignment) {
	if len(ids) == 0 && len(g.owned) == 0 && a == nil {
		return
	}
	g.cfg.Run(ids, a)
	g.owned = ids
}

func (g *Group) metadata() []byte {
	g.mu.Lock()
	m := Metadata{Worker: g.cfg.Worker, Pipelines: g.pipelines, Offered: g.offered, Owned: g.owned}
	g.mu.Unlock()
	b, _ := json.Marshal(m)
	return b
}

func (g *Group) joinAndSync(ctx context.Context) error {
	select {
	case <-g.rejoin: // this join covers any pending request
	default:
	}
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group = g.cfg.Group
	req.SessionTimeoutMillis = int32(g.cfg.SessionTimeout.Milliseconds())
	req.RebalanceTimeoutMillis = int32(g.cfg.RebalanceTimeout.Milliseconds())
	req.MemberID = g.memberID
	req.InstanceID = &g.inst
	req.ProtocolType = ProtocolType
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = Protocol, g.metadata()
	req.Protocols = append(req.Protocols, p)
	jctx, cancel := context.WithTimeout(ctx, g.cfg.RebalanceTimeout+5*time.Second)
	resp, err := req.RequestWith(jctx, g.cl)
	cancel()
	if err != nil {
		return fmt.Errorf("JoinGroup: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		switch {
		case errors.Is(err, kerr.MemberIDRequired):
			g.memberID = resp.MemberID
			return errRejoin
		case errors.Is(err, kerr.UnknownMemberID):
			g.memberID = ""
			g.setOwned(nil, nil)
			return errRejoin
		case errors.Is(err, kerr.InconsistentGroupProtocol):
			return errFatal{fmt.Errorf("worker group %q: the group exists with another protocol type (a consumer group of that name?); choose another worker group name: %w", g.cfg.Group, err)}
		case errors.Is(err, kerr.FencedInstanceID):
			return errFatal{fmt.Errorf("worker group %q: another live worker has the worker id %q (group.instance.id %s): %w", g.cfg.Group, g.cfg.Worker, g.inst, err)}
		case errors.Is(err, kerr.GroupAuthorizationFailed), errors.Is(err, kerr.InvalidGroupID),
			errors.Is(err, kerr.InvalidSessionTimeout), errors.Is(err, kerr.GroupMaxSizeReached):
			return errFatal{fmt.Errorf("worker group %q: JoinGroup: %w", g.cfg.Group, err)}
		}
		return fmt.Errorf("JoinGroup: %w", err)
	}
	g.memberID, g.generation = resp.MemberID, resp.Generation
	g.lastOK = time.Now()
	var plan []kmsg.SyncGroupRequestGroupAssignment
	if resp.LeaderID == resp.MemberID {
		plan = g.lead(resp)
	}
	sreq := kmsg.NewPtrSyncGroupRequest()
	sreq.Group, sreq.Generation, sreq.MemberID, sreq.InstanceID = g.cfg.Group, g.generation, g.memberID, &g.inst
	pt, pn := ProtocolType, Protocol
	sreq.ProtocolType, sreq.Protocol = &pt, &pn
	sreq.GroupAssignment = plan
	sctx, cancel := context.WithTimeout(ctx, g.cfg.RebalanceTimeout+5*time.Second)
	sresp, err := sreq.RequestWith(sctx, g.cl)
	cancel()
	if err != nil {
		return fmt.Errorf("SyncGroup: %w", err)
	}
	if err := kerr.ErrorForCode(sresp.ErrorCode); err != nil {
		switch {
		case errors.Is(err, kerr.RebalanceInProgress):
			return errRejoin
		case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.IllegalGeneration):
			g.memberID = ""
			g.setOwned(nil, nil)
			return errRejoin
		case errors.Is(err, kerr.FencedInstanceID):
			return errFatal{fmt.Errorf("worker group %q: another live worker has the worker id %q: %w", g.cfg.Group, g.cfg.Worker, err)}
		}
		return fmt.Errorf("SyncGroup: %w", err)
	}
	g.lastOK = time.Now()
	a, err := DecodeAssignment(sresp.MemberAssignment)
	if err != nil {
		return fmt.Errorf("generation %d: %w", g.generation, err)
	}
	g.mu.Lock()
	g.last = a
	g.mu.Unlock()
	revoked := false
	for _, id := range g.owned {
		if !slices.Contains(a.Run, id) {
			revoked = true
		}
	}
	g.log.Info("worker group: assignment", zap.Int32("generation", g.generation), zap.String("leader", a.Leader),
		zap.Strings("run", a.Run), zap.Int("workers", len(a.Workers)))
	if mm := a.Mismatched(); len(mm) > 0 {
		g.log.Error("worker group: workers loaded different pipeline files than the leader; singletons whose settings differ run only on workers matching the leader",
			zap.Strings("workers", mm), zap.String("leader", a.Leader), zap.String("leader_pipelines", a.Pipelines))
	}
	g.setOwned(a.Run, a)
	if revoked {
		// Cooperative: what this worker stopped is placed by the next
		// rebalance, which this rejoin starts.
		return errRejoin
	}
	return nil
}

// lead computes the assignment as the group's leader.
func (g *Group) lead(resp *kmsg.JoinGroupResponse) []kmsg.SyncGroupRequestGroupAssignment {
	var members []Member
	var bad []string
	for _, m := range resp.Members {
		md, err := DecodeMetadata(m.ProtocolMetadata)
		if err != nil {
			g.log.Error("worker group: a member's metadata does not decode; it gets no singleton", zap.String("member", m.MemberID), zap.Error(err))
			bad = append(bad, m.MemberID)
			continue
		}
		members = append(members, Member{ID: m.MemberID, Meta: md})
	}
	plan := Assign(resp.MemberID, members)
	out := make([]kmsg.SyncGroupRequestGroupAssignment, 0, len(resp.Members))
	ids := make([]string, 0, len(plan))
	for id := range plan {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		b, _ := json.Marshal(plan[id])
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = id, b
		out = append(out, a)
	}
	for _, id := range bad {
		var lead *Assignment
		for _, a := range plan {
			lead = a
			break
		}
		e := &Assignment{Leader: g.cfg.Worker}
		if lead != nil {
			e = &Assignment{Leader: lead.Leader, Pipelines: lead.Pipelines, Workers: lead.Workers}
		}
		b, _ := json.Marshal(e)
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = id, b
		out = append(out, a)
	}
	return out
}

// heartbeat keeps the membership until a rebalance is needed.
func (g *Group) heartbeat(ctx context.Context) error {
	tk := time.NewTicker(g.cfg.HeartbeatInterval)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-g.rejoin:
			return errRejoin
		case <-tk.C:
		}
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.Generation, req.MemberID, req.InstanceID = g.cfg.Group, g.generation, g.memberID, &g.inst
		hctx, cancel := context.WithTimeout(ctx, g.cfg.SessionTimeout/3)
		resp, err := req.RequestWith(hctx, g.cl)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			g.checkLapse()
			continue
		}
		err = kerr.ErrorForCode(resp.ErrorCode)
		switch {
		case err == nil:
			g.lastOK = time.Now()
		case errors.Is(err, kerr.RebalanceInProgress):
			g.lastOK = time.Now()
			return errRejoin // cooperative: keep running while rejoining
		case errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.IllegalGeneration):
			g.log.Warn("worker group: membership lost; stopping singletons and rejoining", zap.Error(err))
			if errors.Is(err, kerr.UnknownMemberID) {
				g.memberID = ""
			}
			g.setOwned(nil, nil)
			return errRejoin
		case errors.Is(err, kerr.FencedInstanceID):
			return errFatal{fmt.Errorf("worker group %q: another live worker has the worker id %q: %w", g.cfg.Group, g.cfg.Worker, err)}
		default:
			g.checkLapse()
		}
	}
}

// leave sends LeaveGroup for this static member, so its singletons move
// at once.
func (g *Group) leave() {
	if g.memberID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := LeaveStatic(ctx, g.cl, g.cfg.Group, g.inst, g.memberID); err != nil {
		g.log.Warn("worker group: LeaveGroup", zap.Error(err))
		return
	}
	g.log.Info("worker group: left the group")
}

// LeaveStatic removes the static member inst (member id memberID, "" if
// unknown) from group: Kafka's LeaveGroup v3+ with the member's instance
// id, what a static consumer does on a close that leaves the group.
func LeaveStatic(ctx context.Context, cl *kgo.Client, group, inst, memberID string) error {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = group
	req.MemberID = memberID
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID, m.InstanceID = memberID, &inst
	req.Members = append(req.Members, m)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	for _, m := range resp.Members {
		if err := kerr.ErrorForCode(m.ErrorCode); err != nil && !errors.Is(err, kerr.UnknownMemberID) {
			return fmt.Errorf("member %s: %w", inst, err)
		}
	}
	return nil
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

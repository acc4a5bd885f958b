package replica

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"weir/broker/metadata"
	"weir/internal/testkit/script"
)

// TestLeaderStateScripts runs testdata/leader_*.txt (script.Run).
// Commands:
//
//	new self=1 replicas=1,2,3 isr=1,2,3 leo=10 hw=5 lag=100 [epoch=E pepoch=P]
//	append leo=N
//	fetch id=N offset=N t=MS
//	tick t=MS
//	commit isr=1,2 pepoch=P
//	fail
//
// Each prints "hw=N [advanced] isr=... [pending=...] [propose=...]" and,
// for fetch, the follower's LEO.
func TestLeaderStateScripts(t *testing.T) {
	script.Run(t, "testdata/leader_*.txt", func(t *testing.T) func(string, []string) string {
		base := time.UnixMilli(1_700_000_000_000)
		var s *LeaderState
		return func(pos string, fields []string) string { return runCommand(t, &s, pos, fields, base) }
	})
}

func runCommand(t *testing.T, sp **LeaderState, where string, fields []string, base time.Time) string {
	args := map[string]string{}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		args[k] = v
	}
	num := func(k string) int64 {
		n, err := strconv.ParseInt(args[k], 10, 64)
		if err != nil {
			t.Fatalf("%s: bad %s: %v", where, k, err)
		}
		return n
	}
	ids := func(k string) []int32 {
		var out []int32
		for _, p := range strings.Split(args[k], ",") {
			n, err := strconv.Atoi(p)
			if err != nil {
				t.Fatalf("%s: bad %s", where, k)
			}
			out = append(out, int32(n))
		}
		return out
	}
	at := func() time.Time { return base.Add(time.Duration(num("t")) * time.Millisecond) }
	var u Update
	s := *sp
	switch fields[0] {
	case "new":
		p := metadata.Partition{Leader: int32(num("self")), Replicas: ids("replicas"), ISR: ids("isr")}
		if _, ok := args["epoch"]; ok {
			p.LeaderEpoch = int32(num("epoch"))
		}
		if _, ok := args["pepoch"]; ok {
			p.PartitionEpoch = int32(num("pepoch"))
		}
		s = NewLeaderState(p.Leader, p, num("leo"), num("hw"), time.Duration(num("lag"))*time.Millisecond, base)
		*sp = s
		u = Update{HW: s.HW()}
	case "append":
		u = s.Appended(num("leo"))
	case "fetch":
		u = s.FollowerFetch(int32(num("id")), num("offset"), at())
	case "tick":
		u = s.Tick(at())
	case "commit":
		le, _ := s.Epochs()
		u = s.Committed(metadata.Partition{Leader: s.self, LeaderEpoch: le, PartitionEpoch: int32(num("pepoch")), Replicas: s.replicas, ISR: ids("isr")})
	case "fail":
		s.ProposalFailed()
		u = Update{HW: s.HW()}
	default:
		t.Fatalf("%s: unknown command %q", where, fields[0])
	}
	res := fmt.Sprintf("hw=%d", u.HW)
	if u.HWAdvanced {
		res += " advanced"
	}
	res += " isr=" + join(s.ISR())
	if p := s.Pending(); p != nil {
		res += " pending=" + join(p)
	}
	if u.Propose != nil {
		res += " propose=" + join(u.Propose)
	}
	if fields[0] == "fetch" {
		res += fmt.Sprintf(" follower_leo=%d", s.FollowerLEO(int32(num("id"))))
	}
	return res
}

func join(ids []int32) string {
	var parts []string
	for _, id := range ids {
		parts = append(parts, strconv.Itoa(int(id)))
	}
	return strings.Join(parts, ",")
}

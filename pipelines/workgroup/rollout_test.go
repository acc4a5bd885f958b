package workgroup

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

// TestAssignSettlesThroughARollout plays a rollout of new pipeline files
// over a group of three workers, one worker at a time (the leader in the
// middle), where the new files change the settings of two singletons (one
// run by the leader, one by the first worker to reload) and
// add another: after each worker's reload the group must settle within a
// few rebalances (no thrash while the workers' files differ), never give a
// singleton to two workers in one round nor move one in a single
// rebalance (its old owner stops it first), and end with every singleton
// placed once and, once the files agree, balanced.
func TestAssignSettlesThroughARollout(t *testing.T) {
	oldCfg := map[string]string{"source.a": "1", "source.b": "1", "source.c": "1"}
	newCfg := map[string]string{"source.a": "2", "source.b": "2", "source.c": "1", "source.d": "1"}
	type worker struct {
		id, member string
		offered    map[string]string
		owned      []string
	}
	ws := []*worker{{"w1", "m1", oldCfg, nil}, {"w2", "m2", oldCfg, nil}, {"w3", "m3", oldCfg, nil}}
	hash := func(m map[string]string) string { return fmt.Sprint(m) }
	// settle runs rebalances until no worker's assignment changes; it
	// returns how many it took.
	settle := func(step string) int {
		for round := 1; round <= 10; round++ {
			var members []Member
			for _, w := range ws {
				members = append(members, Member{w.member, md(w.id, hash(w.offered), w.offered, w.owned...)})
			}
			plan := Assign("m1", members)
			prev := map[string]string{}
			for _, w := range ws {
				for _, id := range w.owned {
					prev[id] = w.id
				}
			}
			seen := map[string]string{}
			changed := false
			for _, w := range ws {
				run := plan[w.member].Run
				for _, id := range run {
					if other, ok := seen[id]; ok {
						t.Fatalf("%s, round %d: %s given to %s and %s", step, round, id, other, w.id)
					}
					seen[id] = w.id
					if p := prev[id]; p != "" && p != w.id {
						t.Fatalf("%s, round %d: %s moved from %s to %s in one rebalance (the old owner must stop it first)", step, round, id, p, w.id)
					}
				}
				if !slices.Equal(run, w.owned) {
					changed = true
				}
				w.owned = run
			}
			if !changed {
				return round
			}
		}
		t.Fatalf("%s: no stable assignment after 10 rebalances: it thrashes", step)
		return 0
	}
	check := func(step string) {
		n := settle(step)
		t.Logf("%s: settled in %d rebalances: w1 %v, w2 %v, w3 %v", step, n, ws[0].owned, ws[1].owned, ws[2].owned)
		if n > 3 {
			t.Errorf("%s: %d rebalances to settle, want at most 3", step, n)
		}
		placed := map[string]int{}
		lo, hi := 1<<30, 0
		for _, w := range ws {
			for _, id := range w.owned {
				placed[id]++
			}
			lo, hi = min(lo, len(w.owned)), max(hi, len(w.owned))
		}
		// What the leader (w1) offers runs once; what only others offer
		// (their new files' additions) waits for the leader's files.
		for id := range newCfg {
			want := 0
			if _, ok := ws[0].offered[id]; ok {
				want = 1
			}
			if placed[id] != want {
				t.Errorf("%s: %s placed %d times, want %d", step, id, placed[id], want)
			}
		}
		// Balanced once the files agree (before, a worker may be eligible
		// for nothing the others run).
		if (step == "start" || step == "w3 reloaded") && hi-lo > 1 {
			t.Errorf("%s: unbalanced: %v", step, runsOf(ws[0].owned, ws[1].owned, ws[2].owned))
		}
	}
	check("start")
	for _, i := range []int{1, 0, 2} { // w2, then the leader w1, then w3
		ws[i].offered = maps.Clone(newCfg)
		check(ws[i].id + " reloaded")
	}
	for _, id := range slices.Sorted(maps.Keys(newCfg)) {
		n := 0
		for _, w := range ws {
			if slices.Contains(w.owned, id) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("after the rollout %s runs on %d workers, want 1", id, n)
		}
	}
}

func runsOf(l ...[]string) [][]string { return l }

package workgroup

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// ProtocolType is the group's protocol type: the coordinator refuses a
// member of another type (a consumer) with INCONSISTENT_GROUP_PROTOCOL.
const ProtocolType = "weir-workers"

// Protocol is the one protocol (assignment strategy) members offer.
const Protocol = "cooperative-v1"

// Metadata is what a member sends in JoinGroup.
type Metadata struct {
	// Worker is the worker's id (--worker-id).
	Worker string `json:"worker"`
	// Pipelines is the hash of the pipeline configuration it loaded.
	Pipelines string `json:"pipelines"`
	// Offered are the singleton components it can run: ID → settings hash.
	Offered map[string]string `json:"offered,omitempty"`
	// Owned are the singletons it runs now.
	Owned []string `json:"owned,omitempty"`
}

// WorkerInfo is one member as the leader saw it.
type WorkerInfo struct {
	Worker    string   `json:"worker"`
	Pipelines string   `json:"pipelines"`
	Run       []string `json:"run,omitempty"`
}

// Assignment is what the leader gives one member in SyncGroup.
type Assignment struct {
	// Leader is the leader's worker id; Pipelines its configuration hash.
	Leader    string `json:"leader"`
	Pipelines string `json:"pipelines"`
	// Run are the singletons this member runs.
	Run []string `json:"run,omitempty"`
	// Workers are every member and what it runs, sorted by worker id.
	Workers []WorkerInfo `json:"workers"`
}

// Mismatched returns the workers whose pipeline files differ from the
// leader's.
func (a *Assignment) Mismatched() []string {
	var out []string
	for _, w := range a.Workers {
		if w.Pipelines != a.Pipelines {
			out = append(out, w.Worker)
		}
	}
	return out
}

const maxEncoded = 1 << 20

// DecodeMetadata parses a member's JoinGroup metadata.
func DecodeMetadata(b []byte) (*Metadata, error) {
	if len(b) > maxEncoded {
		return nil, fmt.Errorf("worker metadata: %d bytes, more than %d", len(b), maxEncoded)
	}
	var m Metadata
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("worker metadata: %w", err)
	}
	if m.Worker == "" {
		return nil, errors.New("worker metadata: no worker id")
	}
	return &m, nil
}

// DecodeAssignment parses a SyncGroup assignment.
func DecodeAssignment(b []byte) (*Assignment, error) {
	if len(b) > maxEncoded {
		return nil, fmt.Errorf("worker assignment: %d bytes, more than %d", len(b), maxEncoded)
	}
	var a Assignment
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("worker assignment: %w", err)
	}
	if a.Leader == "" {
		return nil, errors.New("worker assignment: no leader")
	}
	return &a, nil
}

// Member is one JoinGroup member as the leader sees it.
type Member struct {
	ID   string // the coordinator's member id
	Meta *Metadata
}

// Assign computes every member's assignment (keyed by member id) from
// their metadata; leader is the leader's member id. It is deterministic.
func Assign(leader string, members []Member) map[string]*Assignment {
	sort.Slice(members, func(i, j int) bool {
		if members[i].Meta.Worker != members[j].Meta.Worker {
			return members[i].Meta.Worker < members[j].Meta.Worker
		}
		return members[i].ID < members[j].ID
	})
	var lead *Metadata
	for _, m := range members {
		if m.ID == leader {
			lead = m.Meta
		}
	}
	if lead == nil && len(members) > 0 {
		lead = members[0].Meta
	}
	run := map[string][]string{} // member id → singletons
	owner := map[string]string{} // singleton → member id
	eligible := func(m Member, id string) bool {
		h, ok := m.Meta.Offered[id]
		return ok && h == lead.Offered[id]
	}
	// Keep what runs where it may keep running.
	for _, m := range members {
		for _, id := range sortedCopy(m.Meta.Owned) {
			if _, taken := owner[id]; taken || !eligible(m, id) {
				continue // revoked: the member stops it and rejoins
			}
			owner[id] = m.ID
			run[m.ID] = append(run[m.ID], id)
		}
	}
	owned := map[string]bool{} // claimed by some member (even if revoked now)
	for _, m := range members {
		for _, id := range m.Meta.Owned {
			owned[id] = true
		}
	}
	ids := make([]string, 0, len(lead.Offered))
	for id := range lead.Offered {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	pending := map[string]int{} // member id → singletons revoked for it
	load := func(id string) int { return len(run[id]) + pending[id] }
	least := func(id string) string {
		best, n := "", -1
		for _, m := range members {
			if !eligible(m, id) {
				continue
			}
			if c := load(m.ID); n < 0 || c < n {
				best, n = m.ID, c
			}
		}
		return best
	}
	// Free singletons (no live member claims them) go to the least loaded.
	for _, id := range ids {
		if _, ok := owner[id]; ok || owned[id] {
			continue
		}
		if to := least(id); to != "" {
			owner[id] = to
			run[to] = append(run[to], id)
		}
	}
	// Balance: revoke from a member running two more than an eligible
	// other; the next rebalance places what it stopped (counted as the
	// other's pending load meanwhile).
	for i := len(ids) - 1; i >= 0; i-- {
		id := ids[i]
		from, ok := owner[id]
		if !ok {
			continue
		}
		to := least(id)
		if to != "" && to != from && load(from) > load(to)+1 {
			run[from] = remove(run[from], id)
			delete(owner, id)
			pending[to]++
		}
	}
	workers := make([]WorkerInfo, 0, len(members))
	for _, m := range members {
		r := sortedCopy(run[m.ID])
		workers = append(workers, WorkerInfo{Worker: m.Meta.Worker, Pipelines: m.Meta.Pipelines, Run: r})
	}
	out := make(map[string]*Assignment, len(members))
	for _, m := range members {
		out[m.ID] = &Assignment{Leader: lead.Worker, Pipelines: lead.Pipelines, Run: sortedCopy(run[m.ID]), Workers: workers}
	}
	return out
}

func sortedCopy(l []string) []string {
	if len(l) == 0 {
		return nil
	}
	c := append([]string(nil), l...)
	sort.Strings(c)
	return c
}

func remove(l []string, s string) []string {
	out := l[:0]
	for _, x := range l {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

package rebalance

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// Partition is one partition's replicas (the first is the preferred
// leader) and its size in bytes.
type Partition struct {
	Topic     string
	Partition int32
	Replicas  []int32
	Bytes     int64
}

// Load is what one broker holds.
type Load struct {
	Replicas int
	Leaders  int // preferred leaderships (first replicas)
	Bytes    int64
}

// Loads returns the load of each of brokers (and of any other broker
// holding a replica) under parts.
func Loads(parts []Partition, brokers []int32) map[int32]Load {
	out := map[int32]Load{}
	for _, b := range brokers {
		out[b] = Load{}
	}
	for _, p := range parts {
		for i, r := range p.Replicas {
			l := out[r]
			l.Replicas++
			l.Bytes += p.Bytes
			if i == 0 {
				l.Leaders++
			}
			out[r] = l
		}
	}
	return out
}

// Plan returns the partitions whose replica lists change (with the new
// lists), in topic then partition order, to even replicas, bytes and
// preferred leaders over brokers. Errors name a partition whose
// replication factor exceeds the number of brokers.
func Plan(parts []Partition, brokers []int32) ([]Partition, error) {
	if len(brokers) == 0 {
		return nil, fmt.Errorf("no brokers to place replicas on")
	}
	in := map[int32]bool{}
	for _, b := range brokers {
		in[b] = true
	}
	cur := make([]Partition, len(parts))
	for i, p := range parts {
		cur[i] = p
		cur[i].Replicas = slices.Clone(p.Replicas)
		if len(p.Replicas) > len(brokers) {
			return nil, fmt.Errorf("%s-%d has %d replicas but only %d brokers are given", p.Topic, p.Partition, len(p.Replicas), len(brokers))
		}
	}
	load := map[int32]*Load{}
	for _, b := range brokers {
		load[b] = &Load{}
	}
	for _, p := range cur {
		for i, r := range p.Replicas {
			if l := load[r]; l != nil {
				l.Replicas++
				l.Bytes += p.Bytes
				if i == 0 {
					l.Leaders++
				}
			}
		}
	}
	less := func(a, b int32) bool { // a is less loaded than b
		la, lb := load[a], load[b]
		if la.Replicas != lb.Replicas {
			return la.Replicas < lb.Replicas
		}
		if la.Bytes != lb.Bytes {
			return la.Bytes < lb.Bytes
		}
		return a < b
	}
	move := func(p *Partition, from, to int32) {
		i := slices.Index(p.Replicas, from)
		p.Replicas[i] = to
		if l := load[from]; l != nil {
			l.Replicas--
			l.Bytes -= p.Bytes
			if i == 0 {
				l.Leaders--
			}
		}
		l := load[to]
		l.Replicas++
		l.Bytes += p.Bytes
		if i == 0 {
			l.Leaders++
		}
	}
	// Largest first, so big partitions land where there is room.
	order := make([]int, len(cur))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return cur[order[a]].Bytes > cur[order[b]].Bytes })

	// 1. Drain brokers outside the set.
	for _, i := range order {
		p := &cur[i]
		for _, r := range slices.Clone(p.Replicas) {
			if in[r] {
				continue
			}
			best := int32(-1)
			for _, b := range brokers {
				if !slices.Contains(p.Replicas, b) && (best < 0 || less(b, best)) {
					best = b
				}
			}
			move(p, r, best)
		}
	}

	// 2. Even replica counts.
	for range len(cur) * len(brokers) {
		hi, lo := brokers[0], brokers[0]
		for _, b := range brokers {
			if less(hi, b) {
				hi = b
			}
			if less(b, lo) {
				lo = b
			}
		}
		if load[hi].Replicas-load[lo].Replicas <= 1 {
			break
		}
		want := (load[hi].Bytes - load[lo].Bytes) / 2
		pick := -1
		for _, i := range order {
			p := &cur[i]
			if !slices.Contains(p.Replicas, hi) || slices.Contains(p.Replicas, lo) {
				continue
			}
			if pick < 0 || abs(p.Bytes-want) < abs(cur[pick].Bytes-want) {
				pick = i
			}
		}
		if pick < 0 {
			break
		}
		move(&cur[pick], hi, lo)
	}

	// 3. Even bytes by swaps (counts stay).
	for range 4 * len(cur) {
		hi, lo := brokers[0], brokers[0]
		for _, b := range brokers {
			if load[b].Bytes > load[hi].Bytes {
				hi = b
			}
			if load[b].Bytes < load[lo].Bytes {
				lo = b
			}
		}
		gap := load[hi].Bytes - load[lo].Bytes
		if gap <= 0 {
			break
		}
		bi, bj, bestGap := -1, -1, gap
		for _, i := range order {
			a := &cur[i]
			if !slices.Contains(a.Replicas, hi) || slices.Contains(a.Replicas, lo) {
				continue
			}
			for _, j := range order {
				b := &cur[j]
				if i == j || !slices.Contains(b.Replicas, lo) || slices.Contains(b.Replicas, hi) {
					continue
				}
				d := a.Bytes - b.Bytes
				if d <= 0 {
					continue
				}
				if g := abs(gap - 2*d); g < bestGap {
					bi, bj, bestGap = i, j, g
				}
			}
		}
		if bi < 0 {
			break
		}
		move(&cur[bi], hi, lo)
		move(&cur[bj], lo, hi)
	}

	// 4. Even preferred leaders.
	for range len(cur) * len(brokers) {
		hi, lo := brokers[0], brokers[0]
		for _, b := range brokers {
			if load[b].Leaders > load[hi].Leaders {
				hi = b
			}
			if load[b].Leaders < load[lo].Leaders {
				lo = b
			}
		}
		if load[hi].Leaders-load[lo].Leaders <= 1 {
			break
		}
		done := false
		for _, i := range order {
			p := &cur[i]
			if p.Replicas[0] != hi {
				continue
			}
			// The replica with the fewest leaderships takes the front.
			best := -1
			for k, r := range p.Replicas[1:] {
				if load[r] != nil && load[r].Leaders < load[hi].Leaders-1 && (best < 0 || load[r].Leaders < load[p.Replicas[best]].Leaders) {
					best = k + 1
				}
			}
			if best < 0 {
				continue
			}
			r := p.Replicas[best]
			p.Replicas = append([]int32{r}, slices.Delete(slices.Clone(p.Replicas), best, best+1)...)
			load[hi].Leaders--
			load[r].Leaders++
			done = true
			break
		}
		if !done {
			break
		}
	}

	var out []Partition
	for i, p := range cur {
		if !slices.Equal(p.Replicas, parts[i].Replicas) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Topic != out[b].Topic {
			return out[a].Topic < out[b].Topic
		}
		return out[a].Partition < out[b].Partition
	})
	return out, nil
}

// Apply returns parts with the replica lists of plan.
func Apply(parts, plan []Partition) []Partition {
	type key struct {
		t string
		p int32
	}
	m := map[key][]int32{}
	for _, p := range plan {
		m[key{p.Topic, p.Partition}] = p.Replicas
	}
	out := make([]Partition, len(parts))
	for i, p := range parts {
		out[i] = p
		if r, ok := m[key{p.Topic, p.Partition}]; ok {
			out[i].Replicas = r
		}
	}
	return out
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// File is Kafka's reassignment JSON (version 1).
type File struct {
	Version    int             `json:"version"`
	Partitions []FilePartition `json:"partitions"`
}

// FilePartition is one partition of a File; LogDirs are "any" (or
// absent).
type FilePartition struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

// Encode returns plan as Kafka's reassignment JSON, with "any" log dirs
// as kafka-reassign-partitions --generate writes them.
func Encode(plan []Partition) []byte {
	f := File{Version: 1, Partitions: []FilePartition{}}
	for _, p := range plan {
		dirs := make([]string, len(p.Replicas))
		for i := range dirs {
			dirs[i] = "any"
		}
		f.Partitions = append(f.Partitions, FilePartition{Topic: p.Topic, Partition: p.Partition, Replicas: p.Replicas, LogDirs: dirs})
	}
	b, _ := json.Marshal(f)
	return b
}

// Decode parses Kafka's reassignment JSON, checking what the broker would
// refuse anyway so the error names the file's entry: a partition listed
// twice, an empty replica list, a broker twice in one list.
func Decode(b []byte) ([]Partition, error) {
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("reassignment JSON: %w", err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("reassignment JSON: version %d, want 1", f.Version)
	}
	seen := map[string]bool{}
	var out []Partition
	for i, p := range f.Partitions {
		name := fmt.Sprintf("%s-%d", p.Topic, p.Partition)
		if p.Topic == "" {
			return nil, fmt.Errorf("reassignment JSON: partitions[%d] has no topic", i)
		}
		if seen[name] {
			return nil, fmt.Errorf("reassignment JSON: %s is listed twice", name)
		}
		seen[name] = true
		if len(p.Replicas) == 0 {
			return nil, fmt.Errorf("reassignment JSON: %s has an empty replica list", name)
		}
		for j, r := range p.Replicas {
			if slices.Contains(p.Replicas[:j], r) {
				return nil, fmt.Errorf("reassignment JSON: %s lists broker %d twice", name, r)
			}
		}
		out = append(out, Partition{Topic: p.Topic, Partition: p.Partition, Replicas: p.Replicas})
	}
	return out, nil
}

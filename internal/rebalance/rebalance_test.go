package rebalance

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func parts(specs ...string) []Partition {
	// "t-0 1,2 100": topic t partition 0 replicas [1 2] 100 bytes
	var out []Partition
	for _, s := range specs {
		var name, reps string
		var bytes int64
		fmt.Sscan(s, &name, &reps, &bytes)
		i := strings.LastIndexByte(name, '-')
		var p int32
		fmt.Sscan(name[i+1:], &p)
		var rs []int32
		for _, r := range strings.Split(reps, ",") {
			var id int32
			fmt.Sscan(r, &id)
			rs = append(rs, id)
		}
		out = append(out, Partition{Topic: name[:i], Partition: p, Replicas: rs, Bytes: bytes})
	}
	return out
}

func spread(t *testing.T, l map[int32]Load, brokers []int32) (reps, leaders int, bytes int64) {
	t.Helper()
	minR, maxR, minL, maxL := 1<<30, -1, 1<<30, -1
	var minB, maxB int64 = 1 << 62, -1
	for _, b := range brokers {
		x := l[b]
		minR, maxR = min(minR, x.Replicas), max(maxR, x.Replicas)
		minL, maxL = min(minL, x.Leaders), max(maxL, x.Leaders)
		minB, maxB = min(minB, x.Bytes), max(maxB, x.Bytes)
	}
	return maxR - minR, maxL - minL, maxB - minB
}

// A new broker 4 joins a cluster of three: replicas, bytes and leaders
// spread over four.
func TestPlanAddBroker(t *testing.T) {
	ps := parts("a-0 1,2,3 100", "a-1 2,3,1 100", "a-2 3,1,2 100", "a-3 1,2,3 100",
		"b-0 1,2 400", "b-1 2,3 10", "b-2 3,1 10", "b-3 1,2 10")
	brokers := []int32{1, 2, 3, 4}
	plan, err := Plan(ps, brokers)
	if err != nil {
		t.Fatal(err)
	}
	after := Apply(ps, plan)
	r, l, b := spread(t, Loads(after, brokers), brokers)
	if r > 1 || l > 1 {
		t.Fatalf("replica spread %d, leader spread %d after %v: %v", r, l, plan, Loads(after, brokers))
	}
	if _, _, b0 := spread(t, Loads(ps, brokers), brokers); b >= b0 {
		t.Fatalf("byte spread %d not below %d before", b, b0)
	}
	for _, p := range after {
		s := slices.Clone(p.Replicas)
		slices.Sort(s)
		if len(slices.Compact(s)) != len(p.Replicas) {
			t.Fatalf("%s-%d replicas %v repeat a broker", p.Topic, p.Partition, p.Replicas)
		}
	}
	if Loads(after, brokers)[4].Replicas == 0 {
		t.Fatal("nothing moved to broker 4")
	}
}

// Draining broker 1 moves every replica off it.
func TestPlanDrain(t *testing.T) {
	ps := parts("a-0 1,2 10", "a-1 2,3 10", "a-2 3,1 10", "a-3 1,3 10")
	plan, err := Plan(ps, []int32{2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range Apply(ps, plan) {
		if slices.Contains(p.Replicas, 1) {
			t.Fatalf("%s-%d still on broker 1: %v", p.Topic, p.Partition, p.Replicas)
		}
	}
	if _, err := Plan(ps, []int32{2}); err == nil {
		t.Fatal("replication factor 2 on one broker planned")
	}
}

// A balanced cluster needs no plan.
func TestPlanBalancedIsEmpty(t *testing.T) {
	ps := parts("a-0 1,2 10", "a-1 2,3 10", "a-2 3,1 10")
	plan, err := Plan(ps, []int32{1, 2, 3})
	if err != nil || len(plan) != 0 {
		t.Fatalf("plan %v, %v", plan, err)
	}
}

func TestEncodeDecode(t *testing.T) {
	plan := parts("a-0 2,3 0")
	b := Encode(plan)
	if string(b) != `{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[2,3],"log_dirs":["any","any"]}]}` {
		t.Fatalf("encoded %s", b)
	}
	got, err := Decode(b)
	if err != nil || len(got) != 1 || !slices.Equal(got[0].Replicas, []int32{2, 3}) {
		t.Fatalf("decoded %v %v", got, err)
	}
	for _, bad := range []string{
		`{"version":2,"partitions":[]}`,
		`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[]}]}`,
		`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,1]}]}`,
		`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1]},{"topic":"a","partition":0,"replicas":[2]}]}`,
		`{"version":1,"partitions":[{"partition":0,"replicas":[1]}]}`,
		`nope`,
	} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%s) succeeded", bad)
		} else {
			t.Logf("%s: %v", bad, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[2,3],"log_dirs":["any","any"]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := Decode(b)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to something that decodes the same.
		again, err := Decode(Encode(ps))
		if err != nil || len(again) != len(ps) {
			t.Fatalf("re-decoding %s: %v", Encode(ps), err)
		}
	})
}

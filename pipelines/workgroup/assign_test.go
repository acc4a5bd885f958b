package workgroup

import (
	"encoding/json"
	"reflect"
	"testing"
)

func md(worker, hash string, offered map[string]string, owned ...string) *Metadata {
	return &Metadata{Worker: worker, Pipelines: hash, Offered: offered, Owned: owned}
}

func runs(plan map[string]*Assignment) map[string][]string {
	out := map[string][]string{}
	for id, a := range plan {
		out[id] = a.Run
	}
	return out
}

func TestAssignSpreadsFreeSingletons(t *testing.T) {
	off := map[string]string{"source.a": "1", "source.b": "2", "source.c": "3"}
	plan := Assign("m1", []Member{{"m1", md("w1", "h", off)}, {"m2", md("w2", "h", off)}, {"m3", md("w3", "h", off)}})
	want := map[string][]string{"m1": {"source.a"}, "m2": {"source.b"}, "m3": {"source.c"}}
	if got := runs(plan); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if plan["m2"].Leader != "w1" || len(plan["m2"].Workers) != 3 {
		t.Fatalf("assignment %+v", plan["m2"])
	}
}

func TestAssignKeepsOwnersAndNeverMovesInOneRound(t *testing.T) {
	off := map[string]string{"source.a": "1", "source.b": "2"}
	// w1 runs both; w2 joins: w1 keeps a, b is revoked (to nobody) so
	// that it never runs on two workers at once.
	plan := Assign("m1", []Member{{"m1", md("w1", "h", off, "source.a", "source.b")}, {"m2", md("w2", "h", off)}})
	want := map[string][]string{"m1": {"source.a"}, "m2": nil}
	if got := runs(plan); !reflect.DeepEqual(got, want) {
		t.Fatalf("round 1: got %v, want %v", got, want)
	}
	// w1 stopped b and rejoined: now b goes to w2.
	plan = Assign("m1", []Member{{"m1", md("w1", "h", off, "source.a")}, {"m2", md("w2", "h", off)}})
	want = map[string][]string{"m1": {"source.a"}, "m2": {"source.b"}}
	if got := runs(plan); !reflect.DeepEqual(got, want) {
		t.Fatalf("round 2: got %v, want %v", got, want)
	}
}

func TestAssignDeadOwnerFreesItsSingletons(t *testing.T) {
	off := map[string]string{"source.a": "1", "source.b": "2"}
	// w2 (which ran b) is gone; b is free.
	plan := Assign("m1", []Member{{"m1", md("w1", "h", off, "source.a")}, {"m3", md("w3", "h", off)}})
	want := map[string][]string{"m1": {"source.a"}, "m3": {"source.b"}}
	if got := runs(plan); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestAssignTwoClaimsKeepOne(t *testing.T) {
	off := map[string]string{"source.a": "1"}
	plan := Assign("m2", []Member{{"m1", md("w1", "h", off, "source.a")}, {"m2", md("w2", "h", off, "source.a")}})
	want := map[string][]string{"m1": {"source.a"}, "m2": nil}
	if got := runs(plan); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestAssignMismatchedSettingsGetNothing(t *testing.T) {
	lead := map[string]string{"source.a": "1", "source.b": "2"}
	other := map[string]string{"source.a": "1-changed", "source.b": "2"}
	// w2 runs a with other settings: revoked; a goes nowhere this round.
	plan := Assign("m1", []Member{{"m1", md("w1", "h1", lead, "source.b")}, {"m2", md("w2", "h2", other, "source.a")}})
	want := map[string][]string{"m1": {"source.b"}, "m2": nil}
	if got := runs(plan); !reflect.DeepEqual(got, want) {
		t.Fatalf("round 1: got %v, want %v", got, want)
	}
	if mm := plan["m1"].Mismatched(); !reflect.DeepEqual(mm, []string{"w2"}) {
		t.Fatalf("mismatched %v", mm)
	}
	// a (only the leader's settings) goes to w1; b, which w2 offers with
	// the leader's settings, is revoked from w1 to balance.
	plan = Assign("m1", []Member{{"m1", md("w1", "h1", lead, "source.b")}, {"m2", md("w2", "h2", other)}})
	want = map[string][]string{"m1": {"source.a"}, "m2": nil}
	if got := runs(plan); !reflect.DeepEqual(got, want) {
		t.Fatalf("round 2: got %v, want %v", got, want)
	}
}

func TestAssignBalancesByRevoking(t *testing.T) {
	off := map[string]string{"a": "", "b": "", "c": "", "d": ""}
	plan := Assign("m1", []Member{{"m1", md("w1", "h", off, "a", "b", "c", "d")}, {"m2", md("w2", "h", off)}})
	if n := len(plan["m1"].Run); n != 2 || len(plan["m2"].Run) != 0 {
		t.Fatalf("got %v", runs(plan))
	}
}

func FuzzDecode(f *testing.F) {
	b, _ := json.Marshal(md("w1", "h", map[string]string{"source.a": "1"}, "source.a"))
	f.Add(b)
	b, _ = json.Marshal(Assign("m1", []Member{{"m1", md("w1", "h", map[string]string{"a": "1"})}})["m1"])
	f.Add(b)
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := DecodeMetadata(b); err == nil {
			// A decoded member takes part in an assignment.
			plan := Assign("m", []Member{{"m", m}})
			if plan["m"] == nil {
				t.Fatal("no assignment for the only member")
			}
			enc, _ := json.Marshal(plan["m"])
			if _, err := DecodeAssignment(enc); err != nil {
				t.Fatalf("own assignment does not decode: %v", err)
			}
		}
		if a, err := DecodeAssignment(b); err == nil {
			_ = a.Mismatched()
		}
		// Status records: a decoded one is kept by the reader under its key.
		rd := NewStatusReader("g")
		if w, err := DecodeWorkerStatus(b); err == nil {
			if err := rd.AddRecord([]byte(WorkerKey("g", w.Worker)), b); err != nil {
				t.Fatalf("decoded worker status refused: %v", err)
			}
			if st := rd.Status(); len(st.Workers) != 1 || len(st.PipelineGroups()) > 1 {
				t.Fatalf("view %+v", st)
			}
		}
		if c, err := DecodeComponentStatus(b); err == nil {
			if err := rd.AddRecord([]byte(ComponentKey("g", c.Component, c.Worker)), b); err != nil {
				t.Fatalf("decoded component status refused: %v", err)
			}
		}
		_ = rd.AddRecord([]byte("g/x"), b)
	})
}

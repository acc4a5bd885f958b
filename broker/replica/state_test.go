package replica

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"weir/broker/metadata"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata scripts")

// TestLeaderStateScripts runs testdata/leader_*.txt: blocks of
//
//	command args...
//	----
//	expected output
//
// separated by blank lines. Commands:
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
	files, _ := filepath.Glob("testdata/leader_*.txt")
	if len(files) == 0 {
		t.Fatal("no testdata/leader_*.txt")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runScript(t, file) })
	}
}

func runScript(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	base := time.UnixMilli(1_700_000_000_000)
	var s *LeaderState
	var out strings.Builder
	blocks := strings.Split(strings.TrimSpace(string(data)), "\n\n")
	for _, blk := range blocks {
		lines := strings.Split(strings.TrimSpace(blk), "\n")
		sep := len(lines)
		for i, ln := range lines {
			if ln == "----" {
				sep = i
				break
			}
		}
		want := ""
		if sep < len(lines) {
			want = strings.Join(lines[sep+1:], "\n")
		}
		var cmdLines []string
		for _, ln := range lines[:sep] {
			if strings.HasPrefix(ln, "#") {
				out.WriteString(ln + "\n")
				continue
			}
			cmdLines = append(cmdLines, ln)
		}
		if len(cmdLines) != 1 {
			t.Fatalf("%s: block without exactly one command:\n%s", file, blk)
		}
		cmd := cmdLines[0]
		got := runCommand(t, &s, cmd, base)
		fmt.Fprintf(&out, "%s\n----\n%s\n\n", cmd, got)
		if !*rewrite && strings.TrimSpace(want) != got {
			t.Errorf("%s: %s\n got: %s\nwant: %s", file, cmd, got, strings.TrimSpace(want))
		}
	}
	if *rewrite {
		if err := os.WriteFile(file, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func runCommand(t *testing.T, sp **LeaderState, cmd string, base time.Time) string {
	fields := strings.Fields(cmd)
	args := map[string]string{}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		args[k] = v
	}
	num := func(k string) int64 {
		n, err := strconv.ParseInt(args[k], 10, 64)
		if err != nil {
			t.Fatalf("%q: bad %s: %v", cmd, k, err)
		}
		return n
	}
	ids := func(k string) []int32 {
		var out []int32
		for _, p := range strings.Split(args[k], ",") {
			n, err := strconv.Atoi(p)
			if err != nil {
				t.Fatalf("%q: bad %s", cmd, k)
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
		t.Fatalf("unknown command %q", cmd)
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

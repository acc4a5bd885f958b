package brokertest

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/brokertest/kafkatools"
	"weir/broker/controller"
	"weir/broker/metadata"
)

// statusLine returns the value of one "Key:   value" line of
// kafka-metadata-quorum describe --status.
func statusLine(t *testing.T, out, key string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + key + `:\s+(.*)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %s line in:\n%s", key, out)
	}
	return strings.TrimSpace(m[1])
}

// voterJSON is a replica as describe --status prints it.
func voterJSON(id int32, dir metadata.UUID, addr string) string {
	s := fmt.Sprintf(`{"id": %d, "directoryId": "%s"`, id, dir)
	if addr != "" {
		s += fmt.Sprintf(`, "endpoints": ["CONTROLLER://%s"]`, addr)
	}
	return s + "}"
}

func replicaList(c *Cluster, ids []int32, endpoints bool) string {
	var parts []string
	for _, id := range ids {
		b := c.Broker(id)
		addr := ""
		if endpoints {
			addr = b.ControllerAddr()
		}
		parts = append(parts, voterJSON(id, b.Node().DirectoryID(), addr))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// checkStatus runs describe --status until its voters and observers are
// the ones given, and checks the other lines against the quorum.
func checkStatus(t *testing.T, c *Cluster, run func(args ...string) (string, error), voters, observers []int32) {
	t.Helper()
	wantVoters, wantObservers := replicaList(c, voters, true), replicaList(c, observers, false)
	var out string
	c.WaitFor(60*time.Second, func() error {
		var err error
		if out, err = run("describe", "--status"); err != nil {
			return err
		}
		if v := statusLine(t, out, "CurrentVoters"); v != wantVoters {
			return fmt.Errorf("CurrentVoters %s, want %s", v, wantVoters)
		}
		if o := statusLine(t, out, "CurrentObservers"); o != wantObservers {
			return fmt.Errorf("CurrentObservers %s, want %s", o, wantObservers)
		}
		return nil
	})
	t.Logf("describe --status:\n%s", out)
	var any *controller.Node
	for _, id := range voters {
		if n := c.Broker(id).Node(); n != nil {
			any = n
		}
	}
	if got := statusLine(t, out, "ClusterId"); got != any.Image().ClusterID() {
		t.Fatalf("ClusterId %s, want %s", got, any.Image().ClusterID())
	}
	leader, _ := strconv.Atoi(statusLine(t, out, "LeaderId"))
	if !containsID(voters, int32(leader)) {
		t.Fatalf("LeaderId %d is not one of the voters %v:\n%s", leader, voters, out)
	}
	for _, k := range []string{"LeaderEpoch", "HighWatermark"} {
		if v, err := strconv.ParseInt(statusLine(t, out, k), 10, 64); err != nil || v < 1 {
			t.Fatalf("%s: %q:\n%s", k, statusLine(t, out, k), out)
		}
	}
	for _, k := range []string{"MaxFollowerLag", "MaxFollowerLagTimeMs"} {
		if _, err := strconv.ParseInt(statusLine(t, out, k), 10, 64); err != nil {
			t.Fatalf("%s: %q:\n%s", k, statusLine(t, out, k), out)
		}
	}
}

func containsID(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// replicationRows parses describe --replication: node id -> row fields.
func replicationRows(t *testing.T, out string) map[int32][]string {
	t.Helper()
	rows := map[int32][]string{}
	header := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 7 && f[0] == "NodeId" {
			want := []string{"NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status"}
			if strings.Join(f, " ") != strings.Join(want, " ") {
				t.Fatalf("header %q", line)
			}
			header = true
			continue
		}
		if !header || len(f) != 7 {
			continue
		}
		id, err := strconv.Atoi(f[0])
		if err != nil {
			t.Fatalf("row %q", line)
		}
		rows[int32(id)] = f
	}
	if !header {
		t.Fatalf("no table in:\n%s", out)
	}
	return rows
}

// TestMetadataQuorumCommand runs Kafka 4.4's kafka-metadata-quorum against
// a 3-broker weir cluster (through --bootstrap-server: weir's controller
// port does not speak the Kafka protocol): describe --status and
// --replication, then a voter is replaced while acks=all producers write
// (broker 4 joins as an observer, add-controller makes it a voter,
// remove-controller makes voter 1 an observer), broker 1 is stopped and
// decommissioned (UnregisterBroker), and every acknowledged record is
// there once, in order. Bad input (an existing voter added, an unknown
// one removed) is refused with Kafka's errors and changes nothing.
func TestMetadataQuorumCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	kafkatools.Require(t)
	c := NewCluster(t, Brokers(3))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run := kafkaTool{t: t, ctx: ctx, class: kafkatools.MetadataQuorumCommand, bootstrap: []string{"--bootstrap-server", c.Broker(2).Addr()}}.run
	checkStatus(t, c, run, []int32{1, 2, 3}, nil)

	// describe --replication: the leader first, then the followers,
	// each caught up.
	var rows map[int32][]string
	c.WaitFor(30*time.Second, func() error {
		out, err := run("describe", "--replication")
		if err != nil {
			return err
		}
		t.Logf("describe --replication:\n%s", out)
		rows = replicationRows(t, out)
		if len(rows) != 3 {
			return fmt.Errorf("rows %v", rows)
		}
		leaders := 0
		for id, f := range rows {
			if f[1] != c.Broker(id).Node().DirectoryID().String() {
				return fmt.Errorf("node %d: directory id %s", id, f[1])
			}
			if f[3] != "0" {
				return fmt.Errorf("node %d lags %s", id, f[3])
			}
			switch f[6] {
			case "Leader":
				leaders++
			case "Follower":
			default:
				return fmt.Errorf("node %d status %s", id, f[6])
			}
			for _, ts := range f[4:6] {
				if v, err := strconv.ParseInt(ts, 10, 64); err != nil || v <= 0 {
					return fmt.Errorf("node %d timestamps %v", id, f[4:6])
				}
			}
		}
		if leaders != 1 {
			return fmt.Errorf("%d leaders", leaders)
		}
		return nil
	})

	out, err := run("describe", "--replication", "--human-readable")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(regexp.MustCompile(`(?m)^\d+\s+\S+\s+\d+\s+\d+\s+\d+ ms ago\s+\d+ ms ago\s+(Leader|Follower)\s*$`).FindAllString(out, -1)); n != 3 {
		t.Fatalf("describe --replication --human-readable: %d rows of 3:\n%s", n, out)
	}

	// A steady acks=all load through the whole change.
	const parts = 3
	c.CreateTopic("steady", parts, 3, map[string]string{"min.insync.replicas": "2"})
	ld := startLoader(t, c.Client(loaderOpts()...), "steady", parts)
	ld.waitMore(100, 30*time.Second)

	// Broker 4 joins as an observer.
	b4 := c.AddBroker()

	// add-controller with broker 4's configuration.
	props := addControllerByTool(t, c, run, b4, []int32{1, 2, 3})
	dir4 := b4.Node().DirectoryID()
	checkStatus(t, c, run, []int32{1, 2, 3, 4}, nil)

	// Bad input: nothing changes.
	if out, err := run("--command-config", props, "add-controller"); err == nil || !strings.Contains(out, "DuplicateVoterException") {
		t.Fatalf("adding voter 4 twice: %v\n%s", err, out)
	}
	if out, err := run("remove-controller", "--controller-id", "9", "--controller-directory-id", dir4.String()); err == nil ||
		!strings.Contains(out, "VoterNotFoundException: Cannot remove voter ReplicaKey(id=9") {
		t.Fatalf("removing voter 9: %v\n%s", err, out)
	}
	checkStatus(t, c, run, []int32{1, 2, 3, 4}, nil)

	// remove-controller 1: it stays an observer while it runs.
	dir1 := c.Broker(1).Node().DirectoryID()
	out, err = run("remove-controller", "--controller-id", "1", "--controller-directory-id", dir1.String())
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("KRaft controller 1 with directory id %s", dir1); !strings.Contains(out, "Removed") || !strings.Contains(out, want) {
		t.Fatalf("remove-controller printed:\n%s\nwant %q", out, want)
	}
	checkStatus(t, c, run, []int32{2, 3, 4}, []int32{1})
	ld.waitMore(100, 30*time.Second)

	// Decommission broker 1: stop it, then UnregisterBroker.
	c.Kill(1)
	cl := c.Client()
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = 1
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("UnregisterBroker 1: %v %+v", err, resp)
	}
	req.BrokerID = 1
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.ErrorCode != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("UnregisterBroker 1 again: %v %+v", err, resp)
	}
	checkStatus(t, c, run, []int32{2, 3, 4}, nil)
	ld.waitMore(100, 30*time.Second)
	acked := ld.finish()
	content4 := readAllPartitions(t, []string{c.Broker(2).Addr(), b4.Addr()}, "steady", parts)
	total := 0
	for p := 0; p < parts; p++ {
		checkPartition(t, p, content4[p], acked[p])
		total += len(acked[p])
	}
	t.Logf("%d records acknowledged and read back through the voter change", total)
}

// TestRemoveLastVoterTool: kafka-metadata-quorum remove-controller of a
// one-voter quorum's only voter gets Kafka's VOTER_NOT_FOUND, and the
// quorum is unchanged.
func TestRemoveLastVoterTool(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	kafkatools.Require(t)
	c := NewCluster(t, Brokers(1))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := kafkaTool{t: t, ctx: ctx, class: kafkatools.MetadataQuorumCommand, bootstrap: []string{"--bootstrap-server", c.Broker(1).Addr()}}.run
	dir := c.Broker(1).Node().DirectoryID()
	out, err := run("remove-controller", "--controller-id", "1", "--controller-directory-id", dir.String())
	want := fmt.Sprintf("VoterNotFoundException: Cannot remove voter ReplicaKey(id=1, directoryId=Optional[%s]) from the set of voters [ReplicaKey(id=1, directoryId=Optional[%s])]", dir, dir)
	if err == nil || !strings.Contains(out, want) {
		t.Fatalf("removing the last voter: %v\n%s\nwant %q", err, out, want)
	}
	checkStatus(t, c, run, []int32{1}, nil)
}

// TestMetadataQuorumCommandBootstrapController: kafka-metadata-quorum
// with --bootstrap-controller reaches weir's controller port (which also
// speaks the Kafka protocol): describe, add-controller and
// remove-controller give Kafka's output there too.
func TestMetadataQuorumCommandBootstrapController(t *testing.T) {
	if testing.Short() {
		t.Skip("starts JVMs")
	}
	kafkatools.Require(t)
	c := NewCluster(t, Brokers(3))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := kafkaTool{t: t, ctx: ctx, class: kafkatools.MetadataQuorumCommand, bootstrap: []string{"--bootstrap-controller", c.Broker(3).ControllerAddr()}}.run
	checkStatus(t, c, run, []int32{1, 2, 3}, nil)
	addControllerByTool(t, c, run, c.AddBroker(), []int32{1, 2, 3})
	dir2 := c.Broker(2).Node().DirectoryID()
	if _, err := run("remove-controller", "--controller-id", "2", "--controller-directory-id", dir2.String()); err != nil {
		t.Fatal(err)
	}
	checkStatus(t, c, run, []int32{1, 3, 4}, []int32{2})
	out, err := run("describe", "--replication")
	if err != nil {
		t.Fatal(err)
	}
	if rows := replicationRows(t, out); len(rows) != 4 || rows[2][6] != "Observer" {
		t.Fatalf("describe --replication:\n%s", out)
	}
}

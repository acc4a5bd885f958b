package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"weir/broker/brokertest"
)

// TestClusterVoterCommands: weir cluster add-voter / remove-voter /
// decommission replace a controller voter and retire its broker on an
// in-process cluster; bad input is refused with nothing changed.
func TestClusterVoterCommands(t *testing.T) {
	t.Parallel()
	c := brokertest.NewCluster(t, brokertest.Brokers(3))
	c.CreateTopic("orders", 3, 3, nil)
	seed := c.Broker(2).Addr()
	weir := func(args ...string) (string, error) {
		out, errOut, err := runWeir(t, "", append(append([]string{"cluster"}, args...), "--brokers", seed)...)
		if err != nil {
			return out + errOut, err
		}
		return out, nil
	}
	refused := func(want string, args ...string) {
		t.Helper()
		out, err := weir(args...)
		if err == nil || !strings.Contains(err.Error()+out, want) {
			t.Fatalf("weir cluster %v: %v\n%s\nwant an error with %q", args, err, out, want)
		}
	}
	voters := func() []int32 {
		st, err := c.Broker(2).Node().DescribeQuorum(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var v []int32
		for _, r := range st.Voters {
			v = append(v, r.ID)
		}
		return v
	}

	b4 := c.AddBroker()
	refused("node 2 is already a voter", "add-voter", "--node-id", "2", "--controller-addr", b4.ControllerAddr())
	refused("node 9 is not an observer", "add-voter", "--node-id", "9", "--controller-addr", b4.ControllerAddr(), "--timeout", "2s")
	refused("--controller-addr", "add-voter", "--node-id", "4")
	refused("VOTER_NOT_FOUND", "remove-voter", "--node-id", "9")
	refused("is a controller voter", "decommission", "--node-id", "2")
	if v := fmt.Sprint(voters()); v != "[1 2 3]" {
		t.Fatalf("voters after bad input: %s", v)
	}

	out, err := weir("add-voter", "--node-id", "4", "--controller-addr", b4.ControllerAddr())
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("added voter 4 with directory id %s and endpoint CONTROLLER://%s", b4.Node().DirectoryID(), b4.ControllerAddr())
	if !strings.Contains(out, want) || !strings.Contains(out, "voters [1,2,3,4], observers []") {
		t.Fatalf("add-voter printed:\n%s\nwant %q", out, want)
	}
	out, err = weir("remove-voter", "--node-id", "1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, fmt.Sprintf("removed voter 1 with directory id %s", c.Broker(1).Node().DirectoryID())) || !strings.Contains(out, "voters [2,3,4], observers [1]") {
		t.Fatalf("remove-voter printed:\n%s", out)
	}

	refused("broker 1 is running", "decommission", "--node-id", "1")
	c.Kill(1)
	c.WaitFor(20*time.Second, func() error {
		_, err := weir("decommission", "--node-id", "1")
		if err == nil || !strings.Contains(err.Error(), "still holds replicas of 3 partitions") {
			return fmt.Errorf("decommission of broker 1 holding replicas: %v", err)
		}
		return nil
	})
	// Brokers learn the fencing one by one: "is running" is "not yet".
	c.WaitFor(20*time.Second, func() error {
		out, err = weir("decommission", "--node-id", "1", "--force")
		return err
	})
	if !strings.Contains(out, "broker 1 decommissioned (3 partitions still list it as a replica") {
		t.Fatalf("decommission printed:\n%s", out)
	}
	// Applied on the broker that answered; the others follow.
	c.WaitFor(10*time.Second, func() error {
		if _, ok := c.Broker(2).Image().Broker(1); ok {
			return fmt.Errorf("broker 1 is still registered")
		}
		return nil
	})
	refused("BROKER_ID_NOT_REGISTERED", "decommission", "--node-id", "1", "--force")
	if v := fmt.Sprint(voters()); v != "[2 3 4]" {
		t.Fatalf("voters at the end: %s", v)
	}
}

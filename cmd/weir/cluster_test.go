package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"weir/broker/brokertest"
)

func TestClusterStatus(t *testing.T) {
	t.Parallel()
	c := brokertest.NewCluster(t, brokertest.Brokers(3))
	c.CreateTopic("orders", 3, 3, nil)
	c.CreateTopic("single", 1, 1, nil)
	out, _, err := runWeir(t, "", "cluster", "status", "--brokers", c.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"controller ", "4 partitions, 0 under-replicated, 0 offline", "orders", "single"} {
		if !strings.Contains(out, want) {
			t.Fatalf("status lacks %q:\n%s", want, out)
		}
	}
	if !regexpLine(out, `1\s+127\.0\.0\.1:\d+\s+-\s+live.*`) {
		t.Fatalf("broker 1 not listed live:\n%s", out)
	}
	// Lose the broker holding "single": it goes offline, "orders" is
	// under-replicated.
	gone := c.Partition("single", 0).Leader
	c.Kill(gone)
	c.WaitFor(20*time.Second, func() error {
		out, _, err = runWeir(t, "", "cluster", "status", "--problems", "--brokers", c.Addrs()[gone%3])
		if err != nil {
			return err
		}
		if !strings.Contains(out, "4 partitions, 3 under-replicated, 1 offline") {
			return fmt.Errorf("status:\n%s", out)
		}
		return nil
	})
	if !regexpLine(out, fmt.Sprintf(`%d\s+-\s+-\s+not live.*`, gone)) || !regexpLine(out, `single\s+0\s+none\s+\d+\s+\[\d\]\s+\[\d\]\s+OFFLINE.*`) {
		t.Fatalf("status after losing broker %d:\n%s", gone, out)
	}
	if regexpLine(out, `.*\sok`) {
		t.Fatalf("--problems listed healthy partitions:\n%s", out)
	}
}

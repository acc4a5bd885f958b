package main

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// startTestBroker starts a broker for the CLI tests and returns its
// bootstrap address.
func startTestBroker(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

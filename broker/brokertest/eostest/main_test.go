package eostest

import (
	"os"
	"strings"
	"testing"

	"weir/internal/txntest"
	"weir/internal/weirbin"
)

// weirPending: scenarios that do not pass against weir yet, with what
// they wait for. They skip against weir with that reason unless
// WEIR_EOS_PENDING=1. Remove an entry when the scenario passes on weir.
var weirPending = map[string]string{
	// Every scenario passes against weir (issue 17); add one here, with
	// the part it waits for, while a part of weir is missing.
}

// pendingOnWeir skips t when scenario waits for a part of weir that has
// not landed (and WEIR_EOS_PENDING is not 1), saying which part.
func pendingOnWeir(t testing.TB, scenario string) bool {
	t.Helper()
	why, ok := weirPending[scenario]
	if !ok || os.Getenv("WEIR_EOS_PENDING") == "1" {
		return false
	}
	t.Skipf("%s does not pass against weir yet: waits for %s (WEIR_EOS_PENDING=1 runs it)", scenario, why)
	return true
}

// wantTarget: EOS_TARGETS (comma-separated kafka, weir) limits the
// targets; all by default.
func wantTarget(name string) bool {
	env := os.Getenv("EOS_TARGETS")
	if env == "" {
		return true
	}
	for _, n := range strings.Split(env, ",") {
		if strings.TrimSpace(n) == name {
			return true
		}
	}
	return false
}

func TestMain(m *testing.M) {
	code := m.Run()
	txntest.Stop()
	weirbin.Cleanup()
	os.Exit(code)
}

// needPeers skips under -short and fails where Java or Maven is missing
// (CI has them).
func needPeers(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs Java peers (Apache Kafka, its client, Kafka Streams): not run with -short")
	}
	if why := Available(); why != "" {
		t.Fatal(why)
	}
}

// apacheKafka returns the PLAINTEXT address of the process's real
// Apache Kafka 4.4 (internal/txntest: started at the first call, stopped
// by TestMain).
func apacheKafka(t testing.TB) string {
	t.Helper()
	needPeers(t)
	return txntest.Kafka(t)
}

// eachTarget runs f as subtest "kafka" against Apache Kafka and as
// subtest "weir" against the broker weir(t) starts (after the pending
// check of scenario).
func eachTarget(t *testing.T, scenario string, weir func(t *testing.T) []string, f func(t *testing.T, target string, seeds []string)) {
	for _, name := range []string{"kafka", "weir"} {
		if !wantTarget(name) {
			continue
		}
		t.Run(name, func(t *testing.T) {
			needPeers(t)
			if name == "kafka" {
				t.Cleanup(func() {
					if why := txntest.Died(); t.Failed() && why != "" {
						t.Log(why)
					}
				})
				f(t, name, []string{apacheKafka(t)})
				return
			}
			pendingOnWeir(t, scenario)
			f(t, name, weir(t))
		})
	}
}

package eostest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/broker/brokertest/testbroker"
	"weir/internal/testkit"
	"weir/internal/txntest"
)

// javaScenarios are TxnScenarios' scenarios (java/.../TxnScenarios.java).
var javaScenarios = []string{"commit", "abort", "open_txn_holds_back", "send_offsets", "zombie_fenced"}

// TestJavaClientTransactions runs Apache Kafka 4.4's Java client
// through the transactional scenarios (one JVM per target, a subtest
// per scenario): commit, abort, an open transaction holding back a
// read_committed consumer, consume-transform-produce with
// sendOffsetsToTransaction, a zombie producer fenced by a second one with
// the same transactional.id. franz-go then reads the commit and abort
// topics with read_committed as a second client.
func TestJavaClientTransactions(t *testing.T) {
	for _, target := range []string{"kafka", "weir"} {
		if !wantTarget(target) {
			continue
		}
		t.Run(target, func(t *testing.T) {
			needPeers(t)
			run := javaScenarios
			pendingAll := os.Getenv("WEIR_EOS_PENDING") == "1"
			if target == "weir" && !pendingAll {
				run = slices.DeleteFunc(slices.Clone(run), func(s string) bool { _, p := weirPending["java/"+s]; return p })
			}
			var seeds []string
			if target == "kafka" {
				seeds = []string{apacheKafka(t)}
			} else if len(run) > 0 {
				seeds = []string{testbroker.Start(t).Addr}
			}
			prefix := fmt.Sprintf("j%d", time.Now().UnixNano()%1e9)
			results := map[string]string{}
			if len(run) > 0 {
				results = runScenarios(t, seeds[0], prefix, run)
			}
			for _, s := range javaScenarios {
				t.Run(s, func(t *testing.T) {
					if target == "weir" {
						pendingOnWeir(t, "java/"+s)
					}
					r, ok := results[s]
					if !ok {
						t.Fatalf("TxnScenarios printed no result for %s", s)
					}
					if !strings.HasPrefix(r, "PASS") {
						t.Fatalf("%s against %s: %s", s, target, r)
					}
					t.Logf("%s: %s", s, r)
					switch s {
					case "commit":
						got := values(txntest.ReadCommitted(t, seeds[0], prefix+"-commit"))
						want := []string{"c-0", "c-1", "c-2", "c-3", "c-4", "c-5", "c-6", "c-7", "c-8", "c-9"}
						if slices.Sort(got); !slices.Equal(got, want) {
							t.Errorf("franz-go read_committed of the committed transaction: %v, want %v", got, want)
						}
					case "abort":
						got := values(txntest.ReadCommitted(t, seeds[0], prefix+"-abort"))
						if want := []string{"c-0", "c-1", "c-2"}; !slices.Equal(got, want) {
							t.Errorf("franz-go read_committed after an aborted and a committed transaction: %v, want %v", got, want)
						}
					}
				})
			}
		})
	}
}

// runScenarios runs TxnScenarios against bootstrap and returns each
// scenario's result line ("PASS ..." or "FAIL reason"); the JVM's log is
// shown when a scenario fails.
func runScenarios(t *testing.T, bootstrap, prefix string, scenarios []string) map[string]string {
	t.Helper()
	cp, err := Classpath()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(scenarios))*2*time.Minute)
	defer cancel()
	logPath := filepath.Join(t.TempDir(), "txnscenarios.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	var out bytes.Buffer
	java, share := Java(cp, "256m", true)
	cmd := exec.CommandContext(ctx, "java", append(append(java, "weir.eostest.TxnScenarios", bootstrap, prefix), scenarios...)...)
	cmd.Stdout, cmd.Stderr = &out, logf
	runErr := cmd.Run()
	share.Done(runErr == nil)
	results := map[string]string{}
	failed := runErr != nil
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if f := strings.SplitN(sc.Text(), " ", 3); len(f) == 3 && f[0] == "RESULT" {
			results[f[1]] = f[2]
			failed = failed || !strings.HasPrefix(f[2], "PASS")
		}
	}
	if failed {
		b, _ := os.ReadFile(logPath)
		t.Logf("TxnScenarios (%v) output:\n%s\nlog:\n%s", runErr, out.String(), testkit.LastLines(string(b), 120))
	}
	return results
}

func values(rs []*kgo.Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.Value))
	}
	return out
}

package eostest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"weir/broker/brokertest/testbroker"
	"weir/internal/testkit"
)

// txnEtlRecords is KGO_TEST_RECORDS for TestTxnEtl (franz-go's default
// is 500,000; this keeps the run to tens of seconds on a loaded machine).
const txnEtlRecords = "50000"

// TestFranzGoTxnEtl runs franz-go's own transactional integration test,
// TestTxnEtl in pkg/kgo (a transactional producer, then three
// consume-transform-produce stages of GroupTransactSession consumers
// that leave and rejoin, every record checked once), against the
// broker: the franz-go module this module requires is copied to a
// temporary directory and tested there with KGO_SEEDS pointing at the
// broker (KGO_TEST_RF=1: one broker).
func TestFranzGoTxnEtl(t *testing.T) {
	eachTarget(t, "franz-go/TestTxnEtl", func(t *testing.T) []string { return []string{testbroker.Start(t).Addr} },
		func(t *testing.T, _ string, seeds []string) {
			mod, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/twmb/franz-go").Output()
			if err != nil {
				t.Fatalf("go list -m github.com/twmb/franz-go: %v", err)
			}
			dir := filepath.Join(t.TempDir(), "franz-go")
			if out, err := exec.Command("cp", "-r", strings.TrimSpace(string(mod)), dir).CombinedOutput(); err != nil {
				t.Fatalf("copying franz-go: %v\n%s", err, out)
			}
			if out, err := exec.Command("chmod", "-R", "u+w", dir).CombinedOutput(); err != nil {
				t.Fatalf("chmod: %v\n%s", err, out)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-timeout=9m", "-run", "^TestTxnEtl$", "./pkg/kgo")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "KGO_SEEDS="+strings.Join(seeds, ","), "KGO_TEST_RF=1",
				"KGO_TEST_RECORDS="+txnEtlRecords, "GOWORK=off",
				"GOFLAGS=-mod=mod -trimpath") // -trimpath: the copy's compiled packages are cached across runs (a new temp folder each time)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("franz-go TestTxnEtl against %v: %v\n%s", seeds, err, testkit.LastLines(string(out), 80))
			}
			t.Logf("franz-go TestTxnEtl: %s", testkit.LastLines(strings.TrimSpace(string(out)), 3))
		})
}

package kafka

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/testkit"
	"weir/internal/weirbin"
)

// weirProcess is a `weir broker` subprocess.
type weirProcess struct {
	cmd       *exec.Cmd
	kafkaAddr string
	adminAddr string
	exited    chan error
}

func TestMain(m *testing.M) {
	// The t.Parallel tests (quotas, re-authentication, kcat) mostly wait
	// on windows, timers and child processes: four at a time, not two.
	testkit.WaitingParallel(4)
	// Under -short (no weir binary, no JVM peers) they are in-process
	// brokers and kcat: eight at a time.
	testkit.WaitingParallelShort(8)
	code := m.Run()
	weirbin.Cleanup() // TestWeirBrokerBinary's weir binary
	os.Exit(code)
}

func startWeir(t *testing.T, bin, dataDir string) *weirProcess {
	t.Helper()
	cmd := exec.Command(bin, "broker", "--data-dir", dataDir, "--kafka-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--registry-addr", "127.0.0.1:0", "--log-format", "json")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &weirProcess{cmd: cmd, exited: make(chan error, 1)}
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		closed := false
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			if line["msg"] == "broker started" && !closed {
				p.kafkaAddr, _ = line["kafka_addr"].(string)
				p.adminAddr, _ = line["admin_addr"].(string)
				close(found)
				closed = true
			}
		}
		io.Copy(io.Discard, stdout)
		p.exited <- cmd.Wait()
	}()
	select {
	case <-found:
	case err := <-p.exited:
		t.Fatalf("weir broker exited before starting: %v", err)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("weir broker did not log its kafka_addr within 30s")
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	})
	return p
}

func (p *weirProcess) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("weir broker exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		t.Fatal("weir broker did not stop within 30s of SIGTERM")
	}
}

// TestWeirBrokerBinary builds weir, runs `weir broker` on :0, produces,
// reads /metrics, kills it with SIGKILL, restarts it on the same data dir,
// consumes everything back, and stops it with SIGTERM (exit status 0).
func TestWeirBrokerBinary(t *testing.T) {
	t.Parallel()
	bin := weirbin.Build(t)
	dataDir := t.TempDir()
	p := startWeir(t, bin, dataDir)

	cl, err := kgo.NewClient(kgo.SeedBrokers(p.kafkaAddr), kgo.DefaultProduceTopic("bin"), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()

	resp, err := http.Get("http://" + p.adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`weir_kafka_requests_total{api="Produce"}`, `weir_kafka_topic_records_in_total{topic="bin"} 100`, "weir_kafka_connections", `weir_kafka_log_size_bytes{topic="bin"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// kill -9: no clean shutdown, the HW checkpoint is stale.
	p.cmd.Process.Kill()
	<-p.exited

	// Restart on the same data directory: the topic and every acknowledged
	// record are back and visible (single node: HW = log end).
	p = startWeir(t, bin, dataDir)
	cl, err = kgo.NewClient(kgo.SeedBrokers(p.kafkaAddr), kgo.ConsumeTopics("bin"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for len(got) < 100 {
		fs := cl.PollFetches(cctx)
		if cctx.Err() != nil {
			t.Fatalf("after restart read %d of 100 records", len(got))
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range got {
		if v != fmt.Sprintf("r%d", i) {
			t.Fatalf("record %d after restart is %q", i, v)
		}
	}
	cl.Close()
	p.stop(t)
}

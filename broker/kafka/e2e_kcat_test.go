package kafka

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// kcatPath finds kcat. It skips the test when kcat is missing locally but
// fails in CI (CI set), where the test command installs it.
func kcatPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("kcat not found on PATH in CI (the test command installs the Debian package kcat): %v", err)
		}
		t.Skip("kcat not on PATH (install the Debian package kcat)")
	}
	return p
}

func TestKcat(t *testing.T) {
	t.Parallel()
	kcat := kcatPath(t)
	b := startBroker(t)
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	var in bytes.Buffer
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "line %06d %s\n", i, strings.Repeat(string(rune('a'+i%26)), i%50))
	}

	out, err := exec.Command(kcat, "-b", b.addr, "-L", "-t", "kcat-meta").CombinedOutput()
	if err != nil {
		t.Fatalf("kcat -L: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `topic "kcat-meta" with 1 partitions`) || !strings.Contains(string(out), "broker 0 at "+b.addr) {
		t.Fatalf("kcat -L output:\n%s", out)
	}

	for _, codec := range []string{"gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			topic := "kcat-" + codec
			p := exec.Command(kcat, "-b", b.addr, "-P", "-t", topic, "-z", codec, "-X", "linger.ms=5")
			p.Stdin = bytes.NewReader(in.Bytes())
			if out, err := p.CombinedOutput(); err != nil {
				t.Fatalf("kcat -P -z %s: %v\n%s", codec, err, out)
			}
			c := exec.Command(kcat, "-b", b.addr, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%s\n")
			var stderr bytes.Buffer
			c.Stderr = &stderr
			got, err := c.Output()
			if err != nil {
				t.Fatalf("kcat -C: %v\n%s", err, stderr.String())
			}
			if !bytes.Equal(got, in.Bytes()) {
				gl, wl := bytes.Count(got, []byte{'\n'}), n
				t.Fatalf("kcat -C -e read back %d lines (%d bytes), want %d lines (%d bytes), identical", gl, len(got), wl, in.Len())
			}
		})
	}
}

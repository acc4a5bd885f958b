package kafka

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// rdkafkaLib is a folder holding a current librdkafka.so.1 (from the
// confluent-kafka wheel, which scripts/test installs): Debian 12's
// librdkafka 2.0.2 repeats the client nonce in its SCRAM final message
// (librdkafka issue 4895, fixed in 2.6.1), which Kafka 4 and weir refuse.
// WEIR_RDKAFKA_LIB overrides the default folder.
func rdkafkaLib(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("WEIR_RDKAFKA_LIB")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "weir", "rdkafka-lib")
	}
	if _, err := os.Stat(filepath.Join(dir, "librdkafka.so.1")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no current librdkafka in %s (scripts/test installs it): %v", dir, err)
		}
		t.Skipf("no current librdkafka in %s (run scripts/test once, or set WEIR_RDKAFKA_LIB)", dir)
	}
	return dir
}

// TestSASLKcat: kcat (librdkafka) produces and consumes with SCRAM-SHA-512
// over SASL_SSL and SASL_PLAINTEXT, and with PLAIN; the SCRAM exchange of
// Debian's librdkafka 2.0.2, whose final message is wrong, is refused.
func TestSASLKcat(t *testing.T) {
	t.Parallel()
	kcat := kcatPath(t)
	lib := rdkafkaLib(t)
	b := startSASLBroker(t, saslConfigs())
	b.addScram(t, kadm.ScramSha512, "alice", "alice-secret")
	run := func(env []string, stdin string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kcat, args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	current := []string{"LD_LIBRARY_PATH=" + lib}
	scramArgs := []string{"-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"}
	cases := []struct {
		name     string
		env      []string
		listener string
		args     []string
	}{
		{"SCRAM-SHA-512 over SASL_SSL", current, "SASL_SSL", append([]string{"-X", "security.protocol=sasl_ssl", "-X", "ssl.ca.location=" + b.tls.trusts}, scramArgs...)},
		{"SCRAM-SHA-512 over SASL_PLAINTEXT", current, "SASL_PLAINTEXT", append([]string{"-X", "security.protocol=sasl_plaintext"}, scramArgs...)},
		{"PLAIN with Debian's librdkafka", nil, "SASL_PLAINTEXT", []string{"-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=admin", "-X", "sasl.password=admin-secret"}},
	}
	var in strings.Builder
	for i := range 100 {
		fmt.Fprintf(&in, "m%d\n", i)
	}
	for i, c := range cases { // one topic each: the cases run at once
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			topic := fmt.Sprintf("kcat-sasl-%d", i)
			createTopic(t, b.testBroker, topic, 1, nil)
			base := append([]string{"-b", b.listenerAddr(c.listener)}, c.args...)
			if out, err := run(c.env, in.String(), append(base, "-P", "-t", topic)...); err != nil {
				t.Fatalf("kcat produce: %v\n%s", err, out)
			}
			out, err := run(c.env, "", append(base, "-C", "-t", topic, "-o", "beginning", "-e", "-q")...)
			if err != nil {
				t.Fatalf("kcat consume: %v\n%s", err, out)
			}
			if got := strings.Count(out, "\n"); got != 100 || !strings.HasPrefix(out, "m0\n") {
				t.Fatalf("kcat consumed %d lines: %.200q", got, out)
			}
		})
	}
	// librdkafka 2.0.2's SCRAM: refused, as by Kafka 4.
	t.Run("SCRAM with Debian's librdkafka", func(t *testing.T) {
		t.Parallel()
		out, err := run(nil, "", append([]string{"-b", b.listenerAddr("SASL_PLAINTEXT"), "-X", "security.protocol=sasl_plaintext", "-L", "-m", "3"}, scramArgs...)...)
		if err == nil {
			t.Fatalf("librdkafka 2.0.2 authenticated with SCRAM:\n%s", out)
		}
	})
	// A wrong password with a current librdkafka.
	t.Run("wrong password", func(t *testing.T) {
		t.Parallel()
		out, err := run(current, "", "-b", b.listenerAddr("SASL_PLAINTEXT"), "-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanisms=SCRAM-SHA-512",
			"-X", "sasl.username=alice", "-X", "sasl.password=wrong", "-L", "-m", "3")
		if err == nil || !strings.Contains(out, "Authentication failed") {
			t.Fatalf("kcat with a wrong password: %v\n%s", err, out)
		}
	})
}

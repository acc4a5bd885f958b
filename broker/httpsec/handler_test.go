package httpsec

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestUsersFileReload: a changed users file takes effect on the next
// request after CheckEvery; one that does not parse is logged once and
// the users in use are kept.
func TestUsersFileReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users")
	write := func(s string, mod time.Time) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour)
	write("alice: one\n", t0)
	core, logs := observer.New(zap.InfoLevel)
	sec, err := New(&Settings{Listener: "test", Auth: &AuthConfig{Realm: "r", UsersFile: path}}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	sec.now = func() time.Time { return now }
	h := sec.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}), Options{})
	code := func(user, pass string) int {
		r := httptest.NewRequest("GET", "/x", nil)
		r.SetBasicAuth(user, pass)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if c := code("alice", "one"); c != 200 {
		t.Fatalf("alice/one: %d", c)
	}
	write("alice: two\n", t0.Add(time.Minute))
	if c := code("alice", "one"); c != 200 {
		t.Fatalf("before CheckEvery passed: %d", c)
	}
	now = now.Add(CheckEvery)
	if c := code("alice", "two"); c != 200 {
		t.Fatalf("after reload alice/two: %d", c)
	}
	if c := code("alice", "one"); c != 401 {
		t.Fatalf("after reload alice/one: %d", c)
	}
	write("alice two three: \\\n", t0.Add(2*time.Minute))
	for range 3 {
		now = now.Add(CheckEvery)
		if c := code("alice", "two"); c != 200 {
			t.Fatalf("with a broken file alice/two: %d", c)
		}
	}
	if n := logs.FilterMessage("users file changed but does not load; keeping the users in use").Len(); n != 1 {
		t.Fatalf("broken file logged %d times, want once", n)
	}
	// A change that keeps the file's size and modification time (two
	// writes within the file system's timestamp granularity, a copy that
	// keeps the old file's time) is seen too.
	write("alice: six\n", t0.Add(3*time.Minute))
	now = now.Add(CheckEvery)
	if c := code("alice", "six"); c != 200 {
		t.Fatalf("after reload alice/six: %d", c)
	}
	write("alice: ten\n", t0.Add(3*time.Minute))
	now = now.Add(CheckEvery)
	if c := code("alice", "ten"); c != 200 {
		t.Fatalf("a change of the same size and time was missed: alice/ten: %d", c)
	}
}

// TestFailureLogRateLimited: failures beyond the burst are counted, not
// logged, and the count rides on the next line written.
func TestFailureLogRateLimited(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	f := failLog{lg: zap.New(core)}
	r := httptest.NewRequest("GET", "/subjects", nil)
	r.RemoteAddr = "10.1.2.3:5555"
	now := time.Now()
	for range failBurst + 30 {
		f.log(now, "registry", "mallory", r, "wrong user name or password")
	}
	if n := logs.Len(); n != failBurst {
		t.Fatalf("%d lines for a burst of %d", n, failBurst)
	}
	f.log(now.Add(time.Second), "registry", "mallory", r, "wrong user name or password")
	last := logs.All()[logs.Len()-1].ContextMap()
	if last["not_logged_before"] != int64(30) || last["host"] != "10.1.2.3" || last["user"] != "mallory" || last["path"] != "/subjects" {
		t.Fatalf("last line %v", last)
	}
	for _, e := range logs.All() {
		if strings.Contains(e.Message, "password=") {
			t.Fatal(e.Message)
		}
	}
}

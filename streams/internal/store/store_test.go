package store

import (
	"fmt"
	"testing"
)

func memGet(t *testing.T, m *Mem, k string) (string, bool) {
	t.Helper()
	v, ok, err := m.Get([]byte(k))
	if err != nil {
		t.Fatal(err)
	}
	return string(v), ok
}

// TestFlushThenSync: Flush hands dirty entries to OnFlush but leaves the
// Backend alone; Sync writes back the latest value of every changed key.
func TestFlushThenSync(t *testing.T) {
	m := NewMem()
	s := New("s", m, 1<<20)
	var flushed []string
	s.OnFlush = func(k, v []byte) error {
		flushed = append(flushed, fmt.Sprintf("%s=%s", k, v))
		return nil
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Put([]byte("a"), []byte("1")))
	must(s.Put([]byte("b"), []byte("1")))
	must(s.Flush())
	must(s.Put([]byte("a"), []byte("2")))
	must(s.Delete([]byte("b")))
	must(s.Flush())
	if got, want := fmt.Sprint(flushed), "[a=1 b=1 a=2 b=]"; got != want {
		t.Fatalf("OnFlush saw %s, want %s", got, want)
	}
	if m.Len() != 0 {
		t.Fatalf("backend has %d entries before Sync, want 0 (written back lazily)", m.Len())
	}
	if v, ok, _ := s.Get([]byte("a")); !ok || string(v) != "2" {
		t.Fatalf("Get(a) = %q %v, want 2", v, ok)
	}
	must(s.Sync())
	if v, ok := memGet(t, m, "a"); !ok || v != "2" {
		t.Fatalf("backend a = %q %v after Sync, want 2", v, ok)
	}
	if _, ok := memGet(t, m, "b"); ok {
		t.Fatal("backend still has b after its deletion was synced")
	}
	// Nothing changed since: a second Sync writes nothing new and the
	// next Flush has nothing to hand out.
	must(s.Sync())
	n := len(flushed)
	must(s.Flush())
	if len(flushed) != n {
		t.Fatalf("Flush after Sync handed out %d entries, want 0", len(flushed)-n)
	}
}

// TestEvictionWritesBack: passing the budget flushes, writes everything
// back and empties the cache; every key then reads its latest value from
// the Backend, and read-modify-write keeps working across evictions.
func TestEvictionWritesBack(t *testing.T) {
	m := NewMem()
	s := New("s", m, 4<<10) // a few dozen entries
	var hook int
	s.OnFlush = func(k, v []byte) error { hook++; return nil }
	const keys, rounds = 500, 7
	for r := range rounds {
		for i := range keys {
			k := []byte(fmt.Sprintf("k%04d", i))
			v, ok, err := s.Get(k)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			if ok {
				if _, err := fmt.Sscan(string(v), &n); err != nil {
					t.Fatal(err)
				}
			}
			if n != r {
				t.Fatalf("round %d: %s = %d", r, k, n)
			}
			if err := s.Put(k, []byte(fmt.Sprint(n+1))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s.CachedBytes() > 4<<10 {
		t.Fatalf("cache holds %d bytes, budget 4096", s.CachedBytes())
	}
	if hook == 0 || m.Len() == 0 {
		t.Fatalf("no eviction happened (hook %d, backend %d)", hook, m.Len())
	}
	var seen int
	if err := s.Scan(func(k, v []byte) error {
		if string(v) != fmt.Sprint(rounds) {
			return fmt.Errorf("%s = %s, want %d", k, v, rounds)
		}
		seen++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if seen != keys {
		t.Fatalf("Scan saw %d keys, want %d", seen, keys)
	}
	if hook < keys*rounds/10 {
		t.Fatalf("OnFlush called %d times", hook)
	}
}

// TestGetThenPutOtherKey: the last-entry shortcut must not write to the
// entry of a different key.
func TestGetThenPutOtherKey(t *testing.T) {
	s := New("s", NewMem(), 1<<20)
	if err := s.Put([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Put([]byte("ab"), []byte("2")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get([]byte("zz")); err != nil { // absent: last stays a
		t.Fatal(err)
	}
	if err := s.Put([]byte("b"), []byte("3")); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"a": "1", "ab": "2", "b": "3"} {
		if v, ok, _ := s.Get([]byte(k)); !ok || string(v) != want {
			t.Fatalf("%s = %q %v, want %s", k, v, ok, want)
		}
	}
}

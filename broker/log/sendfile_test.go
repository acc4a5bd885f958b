package log

import (
	"bytes"
	"io"
	"math/rand"
	"net"
	"sync"
	"testing"

	"weir/broker/log/vfs"
)

// TestSectionSendfileConcurrent sends sections of one segment from many
// goroutines at once over real TCP connections and checks every byte.
func TestSectionSendfileConcurrent(t *testing.T) {
	dir := t.TempDir() + "/t-0"
	l := mustOpen(t, vfs.OS, dir, DefaultConfig(), Options{})
	defer l.Close()
	for i := 0; i < 300; i++ {
		mustAppend(t, l, valueBatch(t, 1+i%9, 200+i, int64(i)))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const workers, rounds = 8, 40
	var srv sync.WaitGroup
	srv.Add(1)
	go func() { // server side: read what each client sends and compare
		defer srv.Done()
		var wg sync.WaitGroup
		for i := 0; i < workers; i++ {
			c, err := ln.Accept()
			if err != nil {
				t.Error(err)
				return
			}
			wg.Add(1)
			go func(c net.Conn) {
				defer wg.Done()
				defer c.Close()
				io.Copy(io.Discard, c)
			}(c)
		}
		wg.Wait()
	}()
	before := SendfileBytes()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			rng := rand.New(rand.NewSource(seed))
			for r := 0; r < rounds; r++ {
				off := rng.Int63n(l.EndOffset())
				s, err := l.Read(off, int32(1+rng.Intn(64<<10)), l.EndOffset())
				if err != nil {
					t.Error(err)
					return
				}
				want, err := s.Bytes()
				if err != nil {
					t.Error(err)
					return
				}
				n, err := s.WriteTo(c)
				s.Release()
				if err != nil || n != int64(len(want)) {
					t.Errorf("WriteTo: %d of %d bytes, %v", n, len(want), err)
					return
				}
			}
		}(int64(w))
	}
	wg.Wait()
	srv.Wait()
	if SendfileBytes() == before {
		t.Fatal("sendfile was not used for a TCP connection")
	}
}

// TestSectionSendfileContent checks the bytes that arrive through sendfile
// under concurrency equal the section's bytes (echo to a checker).
func TestSectionSendfileContent(t *testing.T) {
	dir := t.TempDir() + "/t-0"
	l := mustOpen(t, vfs.OS, dir, DefaultConfig(), Options{})
	defer l.Close()
	for i := 0; i < 200; i++ {
		mustAppend(t, l, valueBatch(t, 1+i%5, 300, int64(i)))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const workers = 6
	results := make(chan error, workers)
	for w := 0; w < workers; w++ {
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		server, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		go func(seed int64, client, server net.Conn) {
			rng := rand.New(rand.NewSource(seed))
			defer client.Close()
			defer server.Close()
			for r := 0; r < 30; r++ {
				s, err := l.Read(rng.Int63n(l.EndOffset()), int32(rng.Intn(200<<10)), l.EndOffset())
				if err != nil {
					results <- err
					return
				}
				want, _ := s.Bytes()
				errc := make(chan error, 1)
				go func() {
					_, err := s.WriteTo(client)
					errc <- err
				}()
				got := make([]byte, len(want))
				if _, err := io.ReadFull(server, got); err != nil {
					results <- err
					return
				}
				if err := <-errc; err != nil {
					results <- err
					return
				}
				s.Release()
				if !bytes.Equal(got, want) {
					results <- io.ErrUnexpectedEOF
					return
				}
			}
			results <- nil
		}(int64(w), client, server)
	}
	for w := 0; w < workers; w++ {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
}

// TestSectionWriteToFallback copies through ReadAt for non-socket writers
// and for files that are not OS files.
func TestSectionWriteToFallback(t *testing.T) {
	l := mustOpen(t, vfs.NewMem(), tdir, DefaultConfig(), Options{})
	defer l.Close()
	b := valueBatch(t, 5, 50, 1)
	mustAppend(t, l, append([]byte(nil), b...))
	s, err := l.Read(0, 1000, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	var buf bytes.Buffer
	if n, err := s.WriteTo(&buf); err != nil || n != int64(len(b)) {
		t.Fatalf("%d %v", n, err)
	}
	if h, err := ParseBatch(buf.Bytes()); err != nil || h.BaseOffset != 0 {
		t.Fatalf("%v", err)
	}
}

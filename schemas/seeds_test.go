package schemas

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestWriteFuzzSeeds regenerates the committed seed corpus under
// testdata/fuzz when WEIR_WRITE_FUZZ_SEEDS=1: valid encodings of random
// values for every FuzzDecode plan, and framed headers for FuzzParseHeader.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("WEIR_WRITE_FUZZ_SEEDS") != "1" {
		t.Skip("set WEIR_WRITE_FUZZ_SEEDS=1 to rewrite testdata/fuzz seeds")
	}
	rng := rand.New(rand.NewSource(3))
	write := func(target, name, body string) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte("go test fuzz v1\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range fuzzPairs {
		for j := 0; j < 3; j++ {
			b, err := NewEncoder(p[0]).Append(nil, gen(p[0].Root, rng, 0))
			if err != nil {
				t.Fatal(err)
			}
			write("FuzzDecode", fmt.Sprintf("seed-%d-%d", i, j), fmt.Sprintf("uint8(%d)\n[]byte(%s)\n", i, strconv.Quote(string(b))))
		}
	}
	for i, b := range [][]byte{AppendHeader(nil, 1), AppendHeader([]byte{}, 1<<20), {0}, {0, 0, 0, 0}, {1, 2, 3, 4, 5, 6}} {
		write("FuzzParseHeader", fmt.Sprintf("seed-%d", i), fmt.Sprintf("[]byte(%s)\n", strconv.Quote(string(b))))
	}
	for i, s := range append([]string{mustRead("testdata/event.avsc")}, userVersions...) {
		write("FuzzParse", fmt.Sprintf("seed-%d", i), fmt.Sprintf("string(%s)\n", strconv.Quote(s)))
	}
}

package schemas

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestCompatibilityCases runs testdata/compat.txt.
func TestCompatibilityCases(t *testing.T) {
	f, err := os.Open("testdata/compat.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type tc struct {
		name   string
		line   int
		old    []*Schema
		new    *Schema
		expect [][2]string
	}
	var cases []*tc
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if name, ok := strings.CutPrefix(line, "=== "); ok {
			cases = append(cases, &tc{name: name, line: ln})
			continue
		}
		if len(cases) == 0 {
			t.Fatalf("compat.txt:%d: expectation before the first case", ln)
		}
		c := cases[len(cases)-1]
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "old", "new":
			s, err := Parse(rest)
			if err != nil {
				t.Fatalf("compat.txt:%d: %v", ln, err)
			}
			if word == "old" {
				c.old = append(c.old, s)
			} else {
				c.new = s
			}
		default:
			if _, err := ParseLevel(word); err != nil {
				t.Fatalf("compat.txt:%d: %v", ln, err)
			}
			c.expect = append(c.expect, [2]string{word, rest})
		}
	}
	if len(cases) < 20 {
		t.Fatalf("only %d cases parsed", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, e := range c.expect {
				level, _ := ParseLevel(e[0])
				got := Check(level, c.new, c.old)
				var sb strings.Builder
				for _, inc := range got {
					fmt.Fprintf(&sb, "%s against=%d %s\n", inc.Direction, inc.Against, inc)
				}
				text := sb.String()
				if e[1] == "ok" {
					if len(got) != 0 {
						t.Errorf("compat.txt:%d: %s: want compatible, got:\n%s", c.line, e[0], text)
					}
					continue
				}
				if len(got) == 0 {
					t.Errorf("compat.txt:%d: %s: want incompatible (%s), got compatible", c.line, e[0], e[1])
					continue
				}
				for _, tok := range tokens(e[1]) {
					if !strings.Contains(text, tok) {
						t.Errorf("compat.txt:%d: %s: reasons lack %q:\n%s", c.line, e[0], tok, text)
					}
				}
			}
		})
	}
}

// tokens splits an expectation into words, keeping 'quoted phrases' that
// contain spaces whole when they are written as whole sentences.
func tokens(s string) []string {
	// Sentences (containing "schema") are matched whole; else word by word.
	if strings.Contains(s, " schema") && !strings.HasPrefix(s, "READER") && !strings.HasPrefix(s, "MISSING") && !strings.HasPrefix(s, "TYPE") {
		return []string{s}
	}
	var out []string
	words := strings.Fields(s)
	for i := 0; i < len(words); i++ {
		w := words[i]
		// Join a run of lower-case words into one phrase.
		if isPhraseWord(w) {
			j := i
			for j+1 < len(words) && isPhraseWord(words[j+1]) {
				j++
			}
			out = append(out, strings.Join(words[i:j+1], " "))
			i = j
			continue
		}
		out = append(out, w)
	}
	return out
}

func isPhraseWord(w string) bool {
	return strings.ToLower(w) == w && !strings.HasPrefix(w, "/") && !strings.HasPrefix(w, "'") && !strings.Contains(w, "=") && !strings.HasPrefix(w, "[")
}

package file

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// glob is one include or exclude pattern: filepath.Match syntax per path
// element, plus "**" for any number of directories.
type glob struct {
	pattern string
	re      *regexp.Regexp
	base    string // longest leading directory without metacharacters
	deep    bool   // has "**": walk base instead of filepath.Glob
	bare    bool   // no separator: matches base names (excludes only)
}

func compileGlob(p string) (*glob, error) {
	g := &glob{pattern: p, deep: strings.Contains(p, "**"), bare: !strings.ContainsRune(p, '/')}
	var sb strings.Builder
	sb.WriteString("^")
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '*':
			if i+1 < len(p) && p[i+1] == '*' {
				if i+2 < len(p) && p[i+2] == '/' {
					sb.WriteString("(?:.*/)?")
					i += 2
				} else {
					sb.WriteString(".*")
					i++
				}
			} else {
				sb.WriteString("[^/]*")
			}
		case '?':
			sb.WriteString("[^/]")
		case '[':
			j := strings.IndexByte(p[i:], ']')
			if j < 0 {
				return nil, errBadGlob(p)
			}
			class := p[i+1 : i+j]
			if strings.HasPrefix(class, "!") || strings.HasPrefix(class, "^") {
				class = "^" + class[1:]
			}
			sb.WriteString("[" + class + "]")
			i += j
		case '\\':
			if i+1 < len(p) {
				i++
				sb.WriteString(regexp.QuoteMeta(string(p[i])))
			}
		default:
			sb.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	sb.WriteString("$")
	re, err := regexp.Compile(sb.String())
	if err != nil {
		return nil, errBadGlob(p)
	}
	g.re = re
	if _, err := filepath.Match(strings.ReplaceAll(p, "**", "*"), ""); err != nil {
		return nil, errBadGlob(p)
	}
	meta := strings.IndexAny(p, "*?[\\")
	if meta < 0 {
		g.base = filepath.Dir(p)
	} else {
		g.base = filepath.Dir(p[:meta] + "x")
	}
	return g, nil
}

func (g *glob) match(path string) bool {
	if g.bare {
		return g.re.MatchString(filepath.Base(path))
	}
	return g.re.MatchString(path)
}

// scanResult is one candidate file found by a scan.
type scanResult struct {
	path string
	info os.FileInfo // os.Stat (symlinks followed)
}

// scanner expands the include globs minus the excludes.
type scanner struct {
	include []*glob
	exclude []*glob
	// onError is told about paths that cannot be inspected.
	onError func(path string, err error)
}

func (s *scanner) excluded(path string) bool {
	for _, g := range s.exclude {
		if g.match(path) {
			return true
		}
	}
	return false
}

// scan returns the regular files matched now, each once.
func (s *scanner) scan() []scanResult {
	seen := map[string]bool{}
	var out []scanResult
	add := func(path string) {
		if seen[path] || s.excluded(path) {
			return
		}
		seen[path] = true
		info, err := os.Stat(path)
		if err != nil {
			s.onError(path, err)
			return
		}
		if !info.Mode().IsRegular() {
			return
		}
		out = append(out, scanResult{path: path, info: info})
	}
	for _, g := range s.include {
		if !g.deep {
			matches, _ := filepath.Glob(g.pattern) // only ErrBadPattern, checked at compile
			for _, m := range matches {
				add(m)
			}
			continue
		}
		// WalkDir does not follow symlinked directories, so a symlink
		// loop cannot trap it; symlinked files are matched and stat'ed.
		_ = filepath.WalkDir(g.base, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if path != g.base || !os.IsNotExist(err) {
					s.onError(path, err)
				}
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if !d.IsDir() && g.match(path) {
				add(path)
			}
			return nil
		})
	}
	return out
}

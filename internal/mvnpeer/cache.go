package mvnpeer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// A built launcher (target/classes and target/lib) is kept in a cache
// folder named for a hash of what it is built from, so that a fresh clone
// (CI's, a new worktree) copies it instead of running Maven again.

// cacheRoot is $WEIR_MVNPEER_CACHE, else weir/mvnpeer in the user's cache
// folder ("" when there is none: no caching).
func cacheRoot() string {
	if d := os.Getenv("WEIR_MVNPEER_CACHE"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "weir", "mvnpeer")
}

// key hashes the project's pom.xml, the module's (when there is one) and
// every file under the module's src/, by name and content.
func (p Project) key(mod string) (string, error) {
	h := sha256.New()
	add := func(path, name string) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\x00", name)
		_, err = io.Copy(h, f)
		fmt.Fprint(h, "\x00")
		return err
	}
	if err := add(filepath.Join(p.Dir, "pom.xml"), "pom.xml"); err != nil {
		return "", err
	}
	if p.Module != "" {
		if err := add(filepath.Join(mod, "pom.xml"), p.Module+"/pom.xml"); err != nil {
			return "", err
		}
	}
	err := filepath.WalkDir(filepath.Join(mod, "src"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(mod, path)
		return add(path, filepath.ToSlash(rel))
	})
	if err != nil && !os.IsNotExist(err) {
		return "", fmt.Errorf("hashing the sources of %s: %w", mod, err)
	}
	name := p.Module
	if name == "" {
		name = filepath.Base(filepath.Dir(p.Dir))
	}
	return name + "-" + hex.EncodeToString(h.Sum(nil))[:24], nil
}

// restore copies the cached build for key into mod/target (fresh
// modification times, so the launcher is newer than the sources) and
// reports whether there was one.
func restore(key, mod string) bool {
	root := cacheRoot()
	if root == "" {
		return false
	}
	src := filepath.Join(root, key)
	if _, err := os.Stat(filepath.Join(src, "complete")); err != nil {
		return false
	}
	for _, sub := range []string{"classes", "lib"} {
		dst := filepath.Join(mod, "target", sub)
		if err := os.RemoveAll(dst); err != nil {
			return false
		}
		if err := copyTree(filepath.Join(src, sub), dst); err != nil {
			return false
		}
	}
	return true
}

// save copies mod/target's classes and lib into the cache under key; a
// failure only means no cache.
func save(key, mod string) {
	root := cacheRoot()
	if root == "" {
		return
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return
	}
	tmp, err := os.MkdirTemp(root, key+".tmp-")
	if err != nil {
		return
	}
	defer os.RemoveAll(tmp)
	for _, sub := range []string{"classes", "lib"} {
		if err := copyTree(filepath.Join(mod, "target", sub), filepath.Join(tmp, sub)); err != nil {
			return
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "complete"), nil, 0o644); err != nil {
		return
	}
	dst := filepath.Join(root, key)
	os.RemoveAll(dst)
	os.Rename(tmp, dst)
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"
)

// MemFS is an in-memory FS. It remembers, per file, which bytes were synced,
// so Crash can model a machine crash: unsynced data is lost, or a chosen
// prefix of it survives. Directory entries (creates, renames, removes) are
// treated as durable immediately. Safe for concurrent use.
type MemFS struct {
	mu    sync.Mutex
	files map[string]*memNode
	dirs  map[string]bool
}

type memNode struct {
	mu     sync.Mutex
	data   []byte
	synced []byte // content as of the last Sync
	mtime  time.Time
	// poison: ranges a failed sync left in the cache but marked clean, so
	// later Syncs do not persist them until they are rewritten.
	poison []span
}

type span struct{ off, end int64 }

// cut removes [off, end) from the poisoned ranges.
func (n *memNode) cut(off, end int64) {
	out := n.poison[:0]
	for _, sp := range n.poison {
		if sp.end <= off || sp.off >= end {
			out = append(out, sp)
			continue
		}
		if sp.off < off {
			out = append(out, span{sp.off, off})
		}
		if sp.end > end {
			out = append(out, span{end, sp.end})
		}
	}
	n.poison = out
}

// NewMem returns an empty in-memory FS.
func NewMem() *MemFS {
	return &MemFS{files: map[string]*memNode{}, dirs: map[string]bool{"/": true, ".": true}}
}

func clean(name string) string { return path.Clean(name) }

func notExist(op, name string) error {
	return &os.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
}

func (m *MemFS) parentExists(name string) bool {
	return m.dirs[path.Dir(name)]
}

func (m *MemFS) Create(name string) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.parentExists(name) {
		return nil, notExist("create", name)
	}
	n := &memNode{mtime: time.Now()}
	m.files[name] = n
	return &memFile{n: n, name: name}, nil
}

func (m *MemFS) OpenReadWrite(name string) (File, error) {
	return m.open("open", name, false)
}

func (m *MemFS) Open(name string) (File, error) {
	return m.open("open", name, true)
}

func (m *MemFS) open(op, name string, ro bool) (File, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[name]
	if !ok {
		return nil, notExist(op, name)
	}
	return &memFile{n: n, name: name, ro: ro}, nil
}

func (m *MemFS) Remove(name string) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.files[name]; ok {
		delete(m.files, name)
		return nil
	}
	if m.dirs[name] {
		prefix := name + "/"
		for f := range m.files {
			if strings.HasPrefix(f, prefix) {
				return &os.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
			}
		}
		delete(m.dirs, name)
		return nil
	}
	return notExist("remove", name)
}

func (m *MemFS) RemoveAll(name string) error {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	prefix := name + "/"
	for f := range m.files {
		if f == name || strings.HasPrefix(f, prefix) {
			delete(m.files, f)
		}
	}
	for d := range m.dirs {
		if d == name || strings.HasPrefix(d, prefix) {
			delete(m.dirs, d)
		}
	}
	return nil
}

func (m *MemFS) Rename(oldname, newname string) error {
	oldname, newname = clean(oldname), clean(newname)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.files[oldname]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	if !m.parentExists(newname) {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: fs.ErrNotExist}
	}
	delete(m.files, oldname)
	m.files[newname] = n
	return nil
}

func (m *MemFS) MkdirAll(dir string) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := dir; ; d = path.Dir(d) {
		m.dirs[d] = true
		if d == "/" || d == "." {
			break
		}
	}
	return nil
}

func (m *MemFS) List(dir string) ([]string, error) {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return nil, notExist("readdir", dir)
	}
	seen := map[string]bool{}
	add := func(p string) {
		if path.Dir(p) == dir && p != dir {
			seen[path.Base(p)] = true
		}
	}
	for f := range m.files {
		add(f)
	}
	for d := range m.dirs {
		add(d)
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	name = clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.files[name]; ok {
		n.mu.Lock()
		defer n.mu.Unlock()
		return memInfo{name: path.Base(name), size: int64(len(n.data)), mtime: n.mtime}, nil
	}
	if m.dirs[name] {
		return memInfo{name: path.Base(name), dir: true}, nil
	}
	return nil, notExist("stat", name)
}

func (m *MemFS) SyncDir(dir string) error {
	dir = clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[dir] {
		return notExist("syncdir", dir)
	}
	return nil
}

// CrashOptions say what survives a simulated crash.
type CrashOptions struct {
	// KeepUnsynced returns how many of the unsynced bytes of file name (beyond
	// its last synced content) survive; it is called once per file whose
	// content differs from its synced content. Nil keeps none. A return
	// value larger than the unsynced length keeps all of it.
	KeepUnsynced func(name string, unsynced int) int
}

// Crash returns a new MemFS holding what a disk would hold after a crash of
// the machine right now: every file's synced content plus the surviving part
// of its unsynced writes (see CrashOptions). The receiver is left unchanged
// and its open Files keep working on the old state.
func (m *MemFS) Crash(opts CrashOptions) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := NewMem()
	for d := range m.dirs {
		out.dirs[d] = true
	}
	for name, n := range m.files {
		n.mu.Lock()
		data := append([]byte(nil), n.synced...)
		// The unsynced part: bytes of data beyond the common prefix with synced.
		common := 0
		for common < len(n.data) && common < len(n.synced) && n.data[common] == n.synced[common] {
			common++
		}
		if common < len(n.data) || len(n.data) != len(n.synced) {
			keep := 0
			if opts.KeepUnsynced != nil && common < len(n.data) {
				keep = opts.KeepUnsynced(name, len(n.data)-common)
			}
			if keep > 0 {
				if common+keep > len(n.data) {
					keep = len(n.data) - common
				}
				data = append(data[:0:0], n.data[:common+keep]...)
				if len(n.synced) > common+keep {
					data = append(data, n.synced[common+keep:]...)
				}
			}
		}
		out.files[name] = &memNode{data: data, synced: append([]byte(nil), data...), mtime: n.mtime}
		n.mu.Unlock()
	}
	return out
}

type memInfo struct {
	name  string
	size  int64
	dir   bool
	mtime time.Time
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i memInfo) ModTime() time.Time { return i.mtime }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

type memFile struct {
	n      *memNode
	name   string
	ro     bool
	closed bool
}

var errClosedFile = errors.New("vfs: file already closed")

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, errClosedFile
	}
	if off < 0 {
		return 0, fmt.Errorf("vfs: negative offset %d reading %s", off, f.name)
	}
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, errClosedFile
	}
	if f.ro {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: fs.ErrPermission}
	}
	if off < 0 {
		return 0, fmt.Errorf("vfs: negative offset %d writing %s", off, f.name)
	}
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	end := off + int64(len(p))
	if end > int64(len(f.n.data)) {
		if end > int64(cap(f.n.data)) {
			c := 2 * cap(f.n.data)
			if int64(c) < end {
				c = int(end)
			}
			nd := make([]byte, len(f.n.data), c)
			copy(nd, f.n.data)
			f.n.data = nd
		}
		old := len(f.n.data)
		f.n.data = f.n.data[:end]
		if off > int64(old) {
			clear(f.n.data[old:off])
		}
	}
	copy(f.n.data[off:], p)
	f.n.cut(off, end)
	f.n.mtime = time.Now()
	return len(p), nil
}

func (f *memFile) Sync() error {
	if f.closed {
		return errClosedFile
	}
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	old := f.n.synced
	synced := append([]byte(nil), f.n.data...)
	for _, sp := range f.n.poison {
		for i := sp.off; i < sp.end && i < int64(len(synced)); i++ {
			if i < int64(len(old)) {
				synced[i] = old[i]
			} else {
				synced[i] = 0 // extended but never written back: a hole
			}
		}
	}
	f.n.synced = synced
	return nil
}

// loseUnsynced models a failed sync (see SyncLoss).
func (f *memFile) loseUnsynced(mode SyncLoss) {
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	if mode == LostDropped {
		f.n.data = append([]byte(nil), f.n.synced...)
		f.n.poison = nil
		return
	}
	common := 0
	for common < len(f.n.data) && common < len(f.n.synced) && f.n.data[common] == f.n.synced[common] {
		common++
	}
	if common < len(f.n.data) {
		f.n.cut(int64(common), int64(len(f.n.data)))
		f.n.poison = append(f.n.poison, span{int64(common), int64(len(f.n.data))})
	}
}

func (f *memFile) Truncate(size int64) error {
	if f.closed {
		return errClosedFile
	}
	if f.ro {
		return &os.PathError{Op: "truncate", Path: f.name, Err: fs.ErrPermission}
	}
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	f.n.cut(size, int64(len(f.n.data))+1)
	if size < int64(len(f.n.data)) {
		f.n.data = f.n.data[:size]
	} else {
		f.n.data = append(f.n.data, make([]byte, size-int64(len(f.n.data)))...)
	}
	return nil
}

func (f *memFile) Size() (int64, error) {
	if f.closed {
		return 0, errClosedFile
	}
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	return int64(len(f.n.data)), nil
}

func (f *memFile) Close() error {
	if f.closed {
		return errClosedFile
	}
	f.closed = true
	return nil
}

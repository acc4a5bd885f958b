package vfs

import (
	"errors"
	"io"
	"os"
)

// File is an open file. ReadAt and WriteAt use explicit offsets and never a
// shared file position, so a File may be read by many goroutines at once while
// one goroutine writes beyond the range they read.
//
// Contract:
//   - ReadAt follows io.ReaderAt (io.EOF at or past the end).
//   - WriteAt writes len(p) bytes at off or returns an error; after an error a
//     prefix of p may have been written (a short or torn write).
//   - Sync makes the file's data durable (fdatasync). Data written but not
//     synced may be lost by a crash (see MemFS.Crash).
//   - Size returns the current size in bytes.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Closer
	Sync() error
	Truncate(size int64) error
	Size() (int64, error)
}

// FS is the small file-system interface the log uses for all disk access.
// Names are slash-separated paths as understood by the implementation.
//
// Contract:
//   - Create creates or truncates name for reading and writing.
//   - OpenReadWrite opens an existing file for reading and writing
//     (os.ErrNotExist, wrapped, if it does not exist).
//   - Open opens an existing file read-only.
//   - Rename atomically replaces newname with oldname.
//   - Remove removes a file (os.ErrNotExist, wrapped, if missing); open Files on
//     it stay readable until closed (POSIX unlink semantics).
//   - List returns the names (not paths) in dir, sorted.
//   - SyncDir makes creates, renames and removes in dir durable.
type FS interface {
	Create(name string) (File, error)
	OpenReadWrite(name string) (File, error)
	Open(name string) (File, error)
	Remove(name string) error
	RemoveAll(name string) error
	Rename(oldname, newname string) error
	MkdirAll(dir string) error
	List(dir string) ([]string, error)
	Stat(name string) (os.FileInfo, error)
	SyncDir(dir string) error
}

// Mapper is an optional capability of an FS: map a whole file read-only into
// memory (mmap). The returned release function unmaps it. Use MapFile, which
// falls back to reading the file into memory.
type Mapper interface {
	Map(name string) (data []byte, release func() error, err error)
}

// ErrNoSpace is returned (wrapped) by writes that run out of disk space.
var ErrNoSpace = errors.New("vfs: no space left on device")

// ErrInjected is the default error returned by a FaultFS fault.
var ErrInjected = errors.New("vfs: injected fault")

// MapFile returns the contents of name, mmapped when fs supports it, read
// into memory otherwise. The caller must call release when done.
func MapFile(fs FS, name string) (data []byte, release func() error, err error) {
	if m, ok := fs.(Mapper); ok {
		return m.Map(name)
	}
	data, err = ReadFile(fs, name)
	return data, func() error { return nil }, err
}

// ReadFile reads the whole file name.
func ReadFile(fs FS, name string) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !(errors.Is(err, io.EOF) && int64(n) == size) {
		return nil, err
	}
	return buf[:n], nil
}

// WriteFileAtomic writes data to name through a temporary file and a rename,
// so readers see either the old or the new content. If durable, the file and
// directory are synced.
func WriteFileAtomic(fs FS, dir, name string, data []byte, durable bool) error {
	tmp := name + ".tmp"
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	// On failure the temporary file is removed: on a full disk its blocks
	// are what the next write needs.
	fail := func(err error) error {
		f.Close()
		fs.Remove(tmp)
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return fail(err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			return fail(err)
		}
	}
	if err := f.Close(); err != nil {
		fs.Remove(tmp)
		return err
	}
	if err := fs.Rename(tmp, name); err != nil {
		fs.Remove(tmp)
		return err
	}
	if durable {
		return fs.SyncDir(dir)
	}
	return nil
}

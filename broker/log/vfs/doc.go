// Package vfs is the small file-system interface through which weir's
// partition log (weir/broker/log) does all disk access, modelled on pebble's
// vfs package.
//
// It owns three implementations:
//
//   - OS: the real file system (pread/pwrite, fdatasync, mmap for read-only
//     index files; its Files expose SyscallConn so readers can sendfile).
//   - MemFS: an in-memory file system that tracks synced vs unsynced bytes per
//     file; MemFS.Crash returns the state a crash would leave behind.
//   - FaultFS: wraps any FS and injects write errors, torn/short writes at a
//     chosen byte, a full disk (ErrNoSpace), sync and create errors.
//
// Files are accessed only with explicit offsets (ReadAt/WriteAt), never a
// shared file position, so concurrent readers and one writer never race.
package vfs

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
//     chosen byte, a full disk (ErrNoSpace), sync and create errors; and,
//     through an Injector that sees every operation (mutations numbered, so
//     a test can fault the k-th), torn writes that report none or some of
//     the bytes that landed, sticky ENOSPC or EROFS, EIO on read, fsync
//     failures after which the unsynced data is dropped or stays readable
//     but is never made durable (MemFS models both), and a halt (crash)
//     after any operation (inject.go).
//
// Files are accessed only with explicit offsets (ReadAt/WriteAt), never a
// shared file position, so concurrent readers and one writer never race.
package vfs

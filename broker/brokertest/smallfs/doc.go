// Package smallfs gives a test a real, small file system to fill:
//
//	fs := smallfs.Mount(t, 8<<20)       // tmpfs of 8 MiB at fs.Dir, unmounted at cleanup
//	fs.Fill(64 << 10)                   // ballast file: leave 64 KiB free
//	... run a broker with its data directory under fs.Dir until writes fail with ENOSPC ...
//	fs.Free()                           // remove the ballast: space is back
//	fs.Resize(16 << 20)                 // or grow (or shrink) the file system in place
//	fs.ReadOnly(); fs.ReadWrite()       // remount read-only (EROFS) and back
//
// It mounts tmpfs (mount -t tmpfs -o size=N), which needs root
// (CAP_SYS_ADMIN). Without root the test is skipped, except when the
// environment variable CI is "true": then it fails, so CI never silently
// skips the disk-full tests. Cleanup unmounts lazily (umount -l) if a
// process still holds files open, so a leaked child cannot wedge the run.
package smallfs

// Package crashtest holds the crash-at-every-operation tests of the
// partition log (weir/broker/log) together with its producer state
// (weir/broker/txn), run through the fault-injecting file system
// (weir/broker/log/vfs.FaultFS over a MemFS).
//
// A scripted workload (idempotent and plain batches, segment rolls, index
// writes, recovery-point checkpoints, producer-state snapshots) is run
// once to count its file-system mutations; then, for every mutation k and
// every fault kind (crash, torn write reporting none or some of its bytes,
// disk full from k on and freed later, index writes failing, read-only
// remount, fsync failing with the unsynced data dropped or kept in cache
// but never written), it is run again with the fault at k, the machine
// "crashes" (unsynced data dropped, or kept), the log is reopened, and the
// test asserts: every segment holds only whole batches with good CRCs,
// index entries point at their batches, the records are exactly the
// acknowledged ones in order (plus, only where the outcome was unknown —
// a crash or an offline log — the one append in flight, whole), and the
// idempotent producer's retry is deduplicated while its next batch is
// accepted. EIO on read is tested at every read of the reopen: it fails
// naming the error or gets past it, and never cuts data.
//
// The package has only tests.
package crashtest

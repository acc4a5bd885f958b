// Package file is the file tail source: it follows the files matched by
// include globs (minus excludes), one record per line or multiline event,
// as Avro log events (EventSchema, registered as "<topic>-value") or JSON,
// or in raw mode (connectors.RawSource, used by pipeline transforms) the
// line as the value and the event's fields beside it, unencoded.
//
// Identity: a file is known by a hash of its first fingerprint_bytes bytes,
// or by device+inode while it is shorter (small files are read too); see
// position.go. Rotation by rename keeps the open descriptor, which is read
// to its end (and closed rotate_wait after its last data); a new file at
// the old path is a new identity read from the start. Copytruncate: the
// copy has the old fingerprint and resumes at the old position (so it is
// not re-shipped; include the rotated names in the globs to get the lines
// written between the last read and the copy), and the truncated original
// is detected (size below the read position, or its first bytes changed)
// and read again from 0 under a new identity.
//
// Checkpoints: the runtime's compacted offsets topic (connectors), not a
// local file. Each record carries its file position; the runtime stores a
// position only after the broker acknowledged every record before it, and
// on restart also scans the destination for acknowledged records newer
// than the stored positions, so a kill -9 loses and duplicates nothing.
//
// Bad input: lines longer than max_line_bytes are cut and flagged
// (truncated=true) and the rest of the line is skipped without buffering
// it; invalid UTF-8 is replaced with U+FFFD; unreadable files, symlink
// loops and vanished files are logged once and counted
// (weir_connector_errors_total{stage=permission|symlink_loop|stat|read}),
// and retried at the next rescan.
//
// Files: spec.go (config spec, Options), source.go (Poll loop, emit),
// files.go (scan results, identity, open/resume), read.go (line
// splitting, truncation, closing), multiline.go, scan.go (globs),
// position.go (keys and position bytes), event.go (the event described
// once for connectors/internal/event, which gives the schema text and the
// Avro and JSON encodings).
package file

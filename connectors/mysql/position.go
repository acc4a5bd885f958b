package mysql

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// SourcePartition is the one source partition of a MySQL source: the
// server's binlog (the snapshot is a prefix of it, so one ordered stream).
const SourcePartition = "binlog"

// Position is where the source is, stored by the runtime with each
// record (JSON in the weir.src header and the offsets topic).
//
// In the binlog: File/Pos and GTID name the start of a transaction (GTID:
// the executed set before it); Skip is the number of records of that
// transaction already emitted (0: none, the transaction is next). The
// last record of a transaction carries the position of the next one, so
// a stored position is a transaction boundary unless the process stopped
// inside a large transaction.
//
// During the snapshot, Snap is set: the table being read and the primary
// key of the last row emitted; File/Pos/GTID are the binlog position the
// snapshot is consistent with, where streaming starts once every table
// is read.
type Position struct {
	File string `json:"f"`
	Pos  uint32 `json:"p"`
	GTID string `json:"g,omitempty"`
	Skip int    `json:"n,omitempty"`

	Snap *SnapPos `json:"s,omitempty"`
}

// SnapPos is the snapshot's progress.
type SnapPos struct {
	Table string   `json:"t"`           // db.table being read
	Key   [][]byte `json:"k,omitempty"` // primary key (text form) of the last row emitted
	Done  bool     `json:"d,omitempty"` // Table is complete
	Rows  int64    `json:"r,omitempty"` // rows emitted of a table without a primary key
}

func (p Position) encode() []byte {
	b, _ := json.Marshal(p)
	return b
}

func decodePosition(b []byte) (Position, error) {
	var p Position
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("stored position %q: %w", b, err)
	}
	if p.File == "" && p.GTID == "" {
		return p, fmt.Errorf("stored position %q names neither a binlog file nor a GTID set", b)
	}
	return p, nil
}

func (p Position) String() string {
	s := fmt.Sprintf("%s:%d", p.File, p.Pos)
	if p.GTID != "" {
		s += " gtid " + p.GTID
	}
	if p.Skip > 0 {
		s += fmt.Sprintf(" +%d records", p.Skip)
	}
	if p.Snap != nil {
		s += " snapshot " + p.Snap.Table
	}
	return s
}

// fileNumber is the numeric suffix of a binlog file name (mysql-bin.000042
// → 42), or 0.
func fileNumber(file string) uint64 {
	i := strings.LastIndexByte(file, '.')
	if i < 0 {
		return 0
	}
	n, err := strconv.ParseUint(file[i+1:], 10, 32)
	if err != nil {
		return 0
	}
	return n
}

// Version is the external version of a change at byte offset pos of
// binlog file (see doc.go): file number << 32 | pos. Rows of one rows
// event use the event's start offset plus the row's index, which stays
// below the next event's offset because every row takes at least a byte.
func Version(file string, pos uint64) int64 {
	return int64(fileNumber(file)<<32 | (pos & 0xffffffff))
}

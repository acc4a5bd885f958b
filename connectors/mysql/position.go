package mysql

import (
	"encoding/base64"
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
	Inc  *IncPos  `json:"i,omitempty"` // incremental snapshots under way (incremental.go)
}

// SnapPos is the snapshot's progress.
type SnapPos struct {
	Table string   `json:"t"`           // db.table being read
	Key   [][]byte `json:"k,omitempty"` // primary key (text form) of the last row emitted
	Done  bool     `json:"d,omitempty"` // Table is complete
	Rows  int64    `json:"r,omitempty"` // rows emitted of a table without a primary key
}

// encode renders p as the JSON json.Marshal would, without reflection
// (it runs once per record).
func (p Position) encode() []byte {
	b := make([]byte, 0, 96)
	b = append(b, `{"f":`...)
	b = appendJSONString(b, p.File)
	b = append(b, `,"p":`...)
	b = strconv.AppendUint(b, uint64(p.Pos), 10)
	if p.GTID != "" {
		b = append(b, `,"g":`...)
		b = appendJSONString(b, p.GTID)
	}
	if p.Skip != 0 {
		b = append(b, `,"n":`...)
		b = strconv.AppendInt(b, int64(p.Skip), 10)
	}
	if sp := p.Snap; sp != nil {
		b = append(b, `,"s":{"t":`...)
		b = appendJSONString(b, sp.Table)
		b = appendKey(b, sp.Key)
		if sp.Done {
			b = append(b, `,"d":true`...)
		}
		if sp.Rows != 0 {
			b = append(b, `,"r":`...)
			b = strconv.AppendInt(b, sp.Rows, 10)
		}
		b = append(b, '}')
	}
	if ip := p.Inc; ip != nil {
		b = append(b, `,"i":{"t":[`...)
		for i, t := range ip.Tables {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, t)
		}
		b = append(b, ']')
		b = appendKey(b, ip.Key)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendKey appends ,"k":[base64...] for a non-empty key.
func appendKey(b []byte, key [][]byte) []byte {
	if len(key) == 0 {
		return b
	}
	b = append(b, `,"k":[`...)
	for i, k := range key {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, k)
		b = append(b, '"')
	}
	return append(b, ']')
}

func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
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
	if p.Inc != nil {
		s += " incremental snapshot of " + strings.Join(p.Inc.Tables, ", ")
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

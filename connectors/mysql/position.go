package mysql

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	gmysql "github.com/go-mysql-org/go-mysql/mysql"

	"weir/internal/jsonw"
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
// is read. Win lists the resumes of an interrupted snapshot (resume.go)
// until the stream passes the last one's position.
type Position struct {
	File string `json:"f"`
	Pos  uint32 `json:"p"`
	GTID string `json:"g,omitempty"`
	Skip int    `json:"n,omitempty"`

	Snap *SnapPos `json:"s,omitempty"`
	Inc  *IncPos  `json:"i,omitempty"` // incremental snapshots under way (incremental.go)
	Win  []Resume `json:"w,omitempty"` // resumes of an interrupted snapshot not yet passed (resume.go)
}

// SnapPos is the snapshot's progress.
type SnapPos struct {
	Table string   `json:"t"`           // db.table being read
	Key   [][]byte `json:"k,omitempty"` // primary key (text form) of the last row emitted
	Done  bool     `json:"d,omitempty"` // Table is complete
	Rows  int64    `json:"r,omitempty"` // rows emitted of a table without a primary key
}

// encode renders p as the JSON json.Marshal would (except that <, > and &
// are not escaped, see internal/jsonw), without reflection (it runs once
// per record). decodePosition reads both.
func (p Position) encode() []byte {
	b := make([]byte, 0, 96)
	b = append(b, `{"f":`...)
	b = jsonw.AppendString(b, p.File)
	b = append(b, `,"p":`...)
	b = strconv.AppendUint(b, uint64(p.Pos), 10)
	if p.GTID != "" {
		b = append(b, `,"g":`...)
		b = jsonw.AppendString(b, p.GTID)
	}
	if p.Skip != 0 {
		b = append(b, `,"n":`...)
		b = strconv.AppendInt(b, int64(p.Skip), 10)
	}
	if sp := p.Snap; sp != nil {
		b = append(b, `,"s":{"t":`...)
		b = jsonw.AppendString(b, sp.Table)
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
			b = jsonw.AppendString(b, t)
		}
		b = append(b, ']')
		b = appendKey(b, ip.Key)
		b = append(b, '}')
	}
	if len(p.Win) > 0 {
		b = append(b, `,"w":[`...)
		for i, r := range p.Win {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"f":`...)
			b = jsonw.AppendString(b, r.File)
			b = append(b, `,"p":`...)
			b = strconv.AppendUint(b, uint64(r.Pos), 10)
			if r.GTID != "" {
				b = append(b, `,"g":`...)
				b = jsonw.AppendString(b, r.GTID)
			}
			b = append(b, `,"t":`...)
			b = jsonw.AppendString(b, r.Table)
			b = appendKey(b, r.Key)
			if r.Done {
				b = append(b, `,"d":true`...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
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
	for _, r := range p.Win {
		s += fmt.Sprintf(" resumed after %s at %s:%d", r.Table, r.File, r.Pos)
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
// binlog file, on servers without GTIDs (see doc.go): file number << 32 |
// pos. Rows of one rows event use the event's start offset plus the row's
// index, which stays below the next event's offset because every row
// takes at least a byte.
func Version(file string, pos uint64) int64 {
	return int64(fileNumber(file)<<32 | (pos & 0xffffffff))
}

// Bits of a GTID version (see doc.go): the GTID count of the executed set
// after the transaction, and the index of the change in it.
const (
	versionChangeBits = 23
	maxVersionChange  = 1<<versionChangeBits - 1 // 8,388,607
	maxVersionCount   = 1<<(63-versionChangeBits) - 1
)

// GTIDVersion is the external version of the change-th change (0-based)
// of a transaction after which the executed GTID set counts count
// transactions (gtidCount): count << 23 | change. Changes past
// maxVersionChange share its version.
func GTIDVersion(count uint64, change int) int64 {
	if change > maxVersionChange {
		change = maxVersionChange
	}
	return int64((count&maxVersionCount)<<versionChangeBits | uint64(change))
}

// gtidCount is what a GTID set counts, equal on every server that holds
// the same transactions and growing with every transaction along any
// server's binlog: MariaDB, the sum over domains of the sequence number
// of the domain's last GTID (sequence numbers grow within a domain);
// MySQL, the number of GTIDs in the set.
func gtidCount(g gmysql.GTIDSet) uint64 {
	var n uint64
	switch g := g.(type) {
	case *gmysql.MariadbGTIDSet:
		for _, servers := range g.Sets {
			var max uint64
			for _, id := range servers {
				if id.SequenceNumber > max {
					max = id.SequenceNumber
				}
			}
			n += max
		}
	case *gmysql.MysqlGTIDSet:
		for _, u := range g.Sets {
			for _, in := range u.Intervals {
				n += uint64(in.Stop - in.Start)
			}
		}
	}
	return n
}

// parseGTIDSet parses a stored or server-reported GTID set. A MariaDB set
// keeps one GTID per domain, the one with the highest sequence number:
// what @slave_connect_state takes (a set naming two servers in a domain,
// as one tracked across a failover would, is refused there).
func parseGTIDSet(flavor, s string) (gmysql.GTIDSet, error) {
	g, err := gmysql.ParseGTIDSet(flavor, s)
	if err != nil {
		return nil, err
	}
	if ms, ok := g.(*gmysql.MariadbGTIDSet); ok {
		for d, servers := range ms.Sets {
			var last *gmysql.MariadbGTID
			for _, id := range servers {
				if last == nil || id.SequenceNumber > last.SequenceNumber {
					last = id
				}
			}
			ms.Sets[d] = map[uint32]*gmysql.MariadbGTID{last.ServerID: last}
		}
	}
	return g, nil
}

// addGTID adds a transaction's GTID to the executed set g. In a MariaDB
// set it becomes its domain's one GTID, whichever server wrote it.
func addGTID(g gmysql.GTIDSet, gtid string) error {
	ms, ok := g.(*gmysql.MariadbGTIDSet)
	if !ok {
		return g.Update(gtid)
	}
	id, err := gmysql.ParseMariadbGTID(gtid)
	if err != nil {
		return err
	}
	ms.Sets[id.DomainID] = map[uint32]*gmysql.MariadbGTID{id.ServerID: id}
	return nil
}

// positionVersion is the version of rows as of binlog position p (a
// snapshot's): below every change streamed after p.
func (s *Source) positionVersion(p Position) int64 {
	if s.si.gtidMode {
		if g, err := parseGTIDSet(s.si.flavor, p.GTID); err == nil {
			return GTIDVersion(gtidCount(g), 0)
		}
	}
	return Version(p.File, uint64(p.Pos))
}

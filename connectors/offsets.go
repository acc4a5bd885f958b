package connectors

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/kafkaclient"
)

// Source positions are stored in a compacted topic (DefaultOffsetsTopic,
// one partition), Kafka Connect style:
//
//	key   ["<connector>","<source partition>"]   value {"seq":N,"pos":"<base64>"}
//	key   ["<connector>"]                        value {"scan":{"<topic>":{"<partition>":<offset>}}}
//
// A position record says: every record of that source partition up to
// sequence number seq (and position pos) is in the destination topic.
// The scan record says where, in each destination partition, records not
// yet covered by a stored position may start.
//
// Exactly-once on restart: every record a source task produces carries a
// SourceHeader (connector, source partition, seq, position). On start the
// task reads the stored positions, then scans the destination partitions
// from the scan offsets to their ends and advances, per source partition,
// the stored position through the unbroken run of seqs found after it.
// Records the broker acknowledged after the last stored commit are thus
// found in the topic itself and not produced again.
// The task writes a scan record before it produces its first record to a
// partition, so the scan always covers what the previous run wrote.
//
// The scan is at-least-once's best effort: records of one source
// partition spread over destination partitions, so a kill can leave a
// later seq acknowledged and an earlier one not; the restart resumes
// after the last seq of the unbroken run from the stored one, so the
// earlier one is read again (not skipped) and the later ones are
// repeated, as are records in flight that were not acknowledged and a
// dead-lettered record's successors (the dead-letter topic is not
// scanned). An
// exactly-once task (SourceOptions.ExactlyOnce, source_txn.go) closes that
// gap: it writes records, positions and scan marks in one transaction
// and reads both the offsets topic and the scan with read_committed, so
// the positions it restores are exactly those of the committed records
// (the scan then finds only records written before a switch from
// at-least-once).

// DefaultOffsetsTopic is the compacted topic of source positions.
const DefaultOffsetsTopic = "_weir_connect_offsets"

// SourceHeader is the header key carrying a record's source position.
const SourceHeader = "weir.src"

// WorkerHeader is the header key naming the worker of a `weir run`
// worker group that produced a source record (SourceOptions.GroupWorker).
const WorkerHeader = "weir.worker"

// errBadHeader is wrapped when a SourceHeader does not decode.
var errBadHeader = errors.New("malformed " + SourceHeader + " header")

type storedPos struct {
	Seq uint64 `json:"seq"`
	Pos []byte `json:"pos"`
}

type scanMarks map[string]map[int32]int64

type scanValue struct {
	Scan map[string]map[string]int64 `json:"scan"`
}

func appendSourceHeader(b []byte, connector, sp string, seq uint64, pos []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(connector)))
	b = append(b, connector...)
	b = binary.AppendUvarint(b, uint64(len(sp)))
	b = append(b, sp...)
	b = binary.AppendUvarint(b, seq)
	return append(b, pos...)
}

func parseSourceHeader(b []byte) (connector, sp string, seq uint64, pos []byte, err error) {
	str := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return "", false
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, true
	}
	var ok bool
	if connector, ok = str(); !ok {
		return "", "", 0, nil, errBadHeader
	}
	if sp, ok = str(); !ok {
		return "", "", 0, nil, errBadHeader
	}
	seq, k := binary.Uvarint(b)
	if k <= 0 {
		return "", "", 0, nil, errBadHeader
	}
	return connector, sp, seq, b[k:], nil
}

func positionKey(connector, sp string) []byte {
	k, _ := json.Marshal([]string{connector, sp})
	return k
}

func scanKey(connector string) []byte {
	k, _ := json.Marshal([]string{connector})
	return k
}

func encodeScan(m scanMarks) []byte {
	v := scanValue{Scan: map[string]map[string]int64{}}
	for t, ps := range m {
		v.Scan[t] = map[string]int64{}
		for p, o := range ps {
			v.Scan[t][strconv.Itoa(int(p))] = o
		}
	}
	b, _ := json.Marshal(v)
	return b
}

// ensureTopic creates topic with configs, accepting one that exists.
func ensureTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) error {
	resp, err := adm.CreateTopic(ctx, partitions, -1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	return nil
}

// restorePositions reads the offsets topic and then scans the
// destination partitions named by the scan record, returning each source
// partition's newest position (by seq). committed (an exactly-once task)
// reads both with read_committed: only what committed transactions wrote
// counts, so positions and records agree exactly. seen reports whether
// the offsets topic holds any record of the connector (a position or its
// scan record, even an empty one: ResetPositions).
func restorePositions(ctx context.Context, co kafkaclient.Options, adm *kadm.Client, offsetsTopic, connector string, committed bool) (_ map[string]storedPos, seen bool, _ error) {
	out := map[string]storedPos{}
	var scan scanValue
	var bad error
	wantScan := string(scanKey(connector))
	err := readRange(ctx, co, adm, map[string]map[int32]int64{offsetsTopic: nil}, false, committed, func(r *kgo.Record) {
		if string(r.Key) == wantScan {
			scan = scanValue{}
			if r.Value != nil {
				seen = true
				if err := json.Unmarshal(r.Value, &scan); err != nil && bad == nil {
					bad = fmt.Errorf("scan record of %s at %s/%d@%d: %w", connector, r.Topic, r.Partition, r.Offset, err)
				}
			}
			return
		}
		var k []string
		if json.Unmarshal(r.Key, &k) != nil || len(k) != 2 || k[0] != connector {
			return
		}
		if r.Value == nil {
			delete(out, k[1])
			return
		}
		seen = true
		var p storedPos
		if err := json.Unmarshal(r.Value, &p); err != nil {
			if bad == nil {
				bad = fmt.Errorf("position of %s/%s at %s/%d@%d: %w", connector, k[1], r.Topic, r.Partition, r.Offset, err)
			}
			return
		}
		if cur, ok := out[k[1]]; !ok || p.Seq >= cur.Seq {
			out[k[1]] = p
		}
	})
	if err != nil {
		return nil, false, fmt.Errorf("reading source positions from %s: %w", offsetsTopic, err)
	}
	if bad != nil {
		return nil, false, bad
	}
	from := map[string]map[int32]int64{}
	for t, ps := range scan.Scan {
		from[t] = map[int32]int64{}
		for p, o := range ps {
			n, err := strconv.Atoi(p)
			if err != nil {
				return nil, false, fmt.Errorf("scan record of %s: partition %q: %w", connector, p, err)
			}
			from[t][int32(n)] = o
		}
	}
	// Partitions not in the scan record were never written by this
	// connector: skip them rather than reading them from the start.
	found := map[string]map[uint64][]byte{} // source partition → seq → position
	err = readRange(ctx, co, adm, from, true, committed, func(r *kgo.Record) {
		for _, h := range r.Headers {
			if h.Key != SourceHeader {
				continue
			}
			c, sp, seq, pos, err := parseSourceHeader(h.Value)
			if err != nil || c != connector || seq <= out[sp].Seq {
				continue
			}
			if found[sp] == nil {
				found[sp] = map[uint64][]byte{}
			}
			found[sp][seq] = append([]byte(nil), pos...)
		}
	})
	if err != nil {
		return nil, false, fmt.Errorf("scanning destination topics for positions of %s: %w", connector, err)
	}
	// A source partition resumes after the last record of an unbroken run
	// of seqs from its stored one: a record missing from the run (still
	// in flight when the task died, in another destination partition than
	// later ones) is read again rather than skipped, and records found
	// after it are written again (at-least-once; an exactly-once task's
	// scan finds none beyond its committed positions).
	for sp, seqs := range found {
		cur := out[sp]
		for {
			pos, ok := seqs[cur.Seq+1]
			if !ok {
				break
			}
			cur = storedPos{Seq: cur.Seq + 1, Pos: pos}
		}
		if cur.Seq > out[sp].Seq {
			out[sp] = cur
		}
	}
	return out, seen, nil
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

package group

// The records of __consumer_offsets, in Kafka's own layout so that Kafka
// tools reading the topic understand them:
//
//	offset commit   key   OffsetCommitKey v1   {group, topic, partition}
//	                value OffsetCommitValue v3 {offset, leaderEpoch, metadata, commitTimestamp}
//	group metadata  key   GroupMetadataKey v2  {group}
//	                value GroupMetadataValue v3 {protocolType, generation, protocol,
//	                      leader, currentStateTimestamp, members[...]}
//	consumer group  key   ConsumerGroupMetadataKey v3 {group}        (KIP-848)
//	                value ConsumerGroupMetadataValue v0 {epoch}
//
// The consumer-protocol member records (key versions 5 and 8) are in
// consumer_records.go; Kafka's subscription-metadata and target-assignment
// records (4, 6, 7) are skipped when replayed (weir does not write them).
//
// A nil value is a tombstone (compaction drops the key). Records are
// written in uncompressed RecordBatch v2 batches with producer id -1,
// except TxnOffsetCommit's: a transactional batch of its producer (id,
// epoch, sequence -1), resolved by the commit or abort marker (a control
// batch) the transaction coordinator has written to the partition.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrBadRecord is a __consumer_offsets record or batch weir cannot decode.
var ErrBadRecord = errors.New("bad __consumer_offsets record")

// Record is one key/value of __consumer_offsets; Value nil is a tombstone.
type Record struct {
	Key, Value []byte
}

// PartitionFor is the __consumer_offsets partition of group among n
// partitions: abs(javaStringHashCode(group)) % n, as Kafka computes it.
func PartitionFor(group string, n int32) int32 {
	var h int32
	for _, c := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(c)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}

func offsetKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: 1, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func offsetValue(o Offset) []byte {
	v := kmsg.OffsetCommitValue{Version: 3, Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata, CommitTimestamp: o.CommitTimestamp}
	return v.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: 2, Group: group}
	return k.AppendTo(nil)
}

// consumerGroupKey is Kafka's ConsumerGroupMetadataKey (version 3):
// the record of a consumer group's epoch.
func consumerGroupKey(group string) []byte {
	b := binary.BigEndian.AppendUint16(nil, 3)
	b = binary.BigEndian.AppendUint16(b, uint16(len(group)))
	return append(b, group...)
}

// consumerGroupValue is Kafka's ConsumerGroupMetadataValue v0 (flexible):
// the group epoch and no tagged fields.
func consumerGroupValue(epoch int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(epoch))
	return append(b, 0)
}

// decodedRecord is one replayed record.
type decodedRecord struct {
	group string
	// offset records
	isOffset  bool
	topic     string
	partition int32
	offset    *kmsg.OffsetCommitValue
	// group records
	meta *kmsg.GroupMetadataValue
	// consumer group records (key version 3): isConsumer, and the epoch
	// unless a tombstone (consumerTombstone)
	isConsumer        bool
	consumerEpoch     int32
	consumerTombstone bool
	// consumer group member records (key versions 5 and 8):
	// memberKind is 5 or 8, member the member id, memberRec the decoded
	// value (nil: a tombstone)
	memberKind int16
	member     string
	memberRec  *consumerMember
	// other records of Kafka's consumer protocol (key versions 4, 6, 7:
	// subscription metadata, target assignment) that weir does not keep:
	// skipped
	skip bool
}

func decodeRecord(key, value []byte) (decodedRecord, error) {
	if len(key) < 2 {
		return decodedRecord{}, fmt.Errorf("%w: key of %d bytes", ErrBadRecord, len(key))
	}
	switch v := int16(binary.BigEndian.Uint16(key)); v {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return decodedRecord{}, fmt.Errorf("%w: offset key: %v", ErrBadRecord, err)
		}
		d := decodedRecord{group: k.Group, isOffset: true, topic: k.Topic, partition: k.Partition}
		if value != nil {
			var ov kmsg.OffsetCommitValue
			if err := ov.ReadFrom(value); err != nil {
				return decodedRecord{}, fmt.Errorf("%w: offset value of group %q: %v", ErrBadRecord, k.Group, err)
			}
			if ov.Version < 3 {
				ov.LeaderEpoch = -1
			}
			d.offset = &ov
		}
		return d, nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return decodedRecord{}, fmt.Errorf("%w: group key: %v", ErrBadRecord, err)
		}
		d := decodedRecord{group: k.Group}
		if value != nil {
			var gv kmsg.GroupMetadataValue
			if err := gv.ReadFrom(value); err != nil {
				return decodedRecord{}, fmt.Errorf("%w: group value of %q: %v", ErrBadRecord, k.Group, err)
			}
			d.meta = &gv
		}
		return d, nil
	case 3:
		if len(key) < 4 || int(binary.BigEndian.Uint16(key[2:]))+4 != len(key) {
			return decodedRecord{}, fmt.Errorf("%w: consumer group key of %d bytes", ErrBadRecord, len(key))
		}
		d := decodedRecord{group: string(key[4:]), isConsumer: true, consumerTombstone: value == nil}
		if value != nil {
			if len(value) < 6 {
				return decodedRecord{}, fmt.Errorf("%w: consumer group value of %q: %d bytes", ErrBadRecord, d.group, len(value))
			}
			d.consumerEpoch = int32(binary.BigEndian.Uint32(value[2:]))
		}
		return d, nil
	case 5, 8:
		group, member, err := decodeMemberKey(key)
		if err != nil {
			return decodedRecord{}, err
		}
		d := decodedRecord{group: group, memberKind: v, member: member}
		if value != nil {
			d.memberRec = &consumerMember{}
			if v == 5 {
				err = decodeMemberValue(value, d.memberRec)
			} else {
				err = decodeAssignmentValue(value, d.memberRec)
			}
			if err != nil {
				return decodedRecord{}, fmt.Errorf("%w (group %q member %q)", err, group, member)
			}
		}
		return d, nil
	case 4, 6, 7:
		return decodedRecord{skip: true}, nil
	default:
		return decodedRecord{}, fmt.Errorf("%w: unknown key version %d", ErrBadRecord, v)
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BuildBatch encodes recs as one uncompressed RecordBatch v2 with base
// offset 0 (the log stamps it), all records at timestamp nowMs.
func BuildBatch(recs []Record, nowMs int64) []byte { return buildBatch(recs, nowMs, -1, -1) }

// BuildTxnBatch is BuildBatch for a transactional batch of producer
// producerID at epoch: the transactional attribute set and no sequence
// (-1), as Kafka's group coordinator writes TxnOffsetCommit's offsets.
func BuildTxnBatch(recs []Record, nowMs int64, producerID int64, epoch int16) []byte {
	return buildBatch(recs, nowMs, producerID, epoch)
}

func buildBatch(recs []Record, nowMs int64, producerID int64, epoch int16) []byte {
	var body []byte
	for i := range recs {
		r := kmsg.Record{OffsetDelta: int32(i), Key: recs[i].Key, Value: recs[i].Value}
		start := len(body)
		body = r.AppendTo(body)
		// AppendTo wrote Length 0 (one varint byte); rewrite it.
		n := len(body) - start - 1
		body = append(body[:start], append(kbin.AppendVarint(nil, int32(n)), body[start+1:]...)...)
	}
	b := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       nowMs,
		MaxTimestamp:         nowMs,
		ProducerID:           producerID,
		ProducerEpoch:        epoch,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              body,
	}
	if producerID >= 0 {
		b.Attributes = attrTransactional
	}
	out := b.AppendTo(make([]byte, 0, 61+len(body)))
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], castagnoli))
	return out
}

const (
	attrTransactional = 0x10
	attrControl       = 0x20
)

// ParseBatches calls fn for every record of the concatenated RecordBatch
// v2 batches in b, in order. Control batches are skipped; compressed
// batches are an error (weir writes none to __consumer_offsets).
func ParseBatches(b []byte, fn func(key, value []byte) error) error {
	return ReplayBatches(b, func(_ int64, k, v []byte) error { return fn(k, v) }, nil)
}

// ReplayBatches is ParseBatches for loading a partition: fn gets each
// data record with the producer id of its batch when the batch is
// transactional (-1 otherwise), marker each commit or abort marker
// (control records of other types are skipped, as Kafka does). A control
// batch whose record is not a marker of Kafka's layout is an error.
func ReplayBatches(b []byte, fn func(producerID int64, key, value []byte) error, marker func(producerID int64, commit bool) error) error {
	for len(b) > 0 {
		if len(b) < 61 {
			return fmt.Errorf("%w: %d trailing bytes", ErrBadRecord, len(b))
		}
		size := int(int32(binary.BigEndian.Uint32(b[8:]))) + 12
		if size < 61 || size > len(b) {
			return fmt.Errorf("%w: batch length %d with %d bytes left", ErrBadRecord, size-12, len(b))
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:size]); err != nil {
			return fmt.Errorf("%w: batch: %v", ErrBadRecord, err)
		}
		b = b[size:]
		if rb.Magic != 2 {
			return fmt.Errorf("%w: magic %d", ErrBadRecord, rb.Magic)
		}
		control := rb.Attributes&attrControl != 0
		if control && marker == nil {
			continue
		}
		if codec := rb.Attributes & 0x07; codec != 0 {
			return fmt.Errorf("%w: compressed batch (codec %d)", ErrBadRecord, codec)
		}
		pid := int64(-1)
		if rb.Attributes&attrTransactional != 0 {
			pid = rb.ProducerID
		}
		recs := rb.Records
		for i := int32(0); i < rb.NumRecords; i++ {
			rd := kbin.Reader{Src: recs}
			n := rd.Varint()
			if !rd.Ok() || n < 0 || int(n) > len(rd.Src) {
				return fmt.Errorf("%w: record %d of batch at offset %d truncated", ErrBadRecord, i, rb.FirstOffset)
			}
			end := len(recs) - len(rd.Src) + int(n)
			var r kmsg.Record
			if err := r.ReadFrom(recs[:end]); err != nil {
				return fmt.Errorf("%w: record %d of batch at offset %d: %v", ErrBadRecord, i, rb.FirstOffset, err)
			}
			recs = recs[end:]
			if control {
				// Kafka's control record key: version int16, type
				// int16 (0 abort, 1 commit).
				if len(r.Key) < 4 {
					return fmt.Errorf("%w: control record key of %d bytes in batch at offset %d", ErrBadRecord, len(r.Key), rb.FirstOffset)
				}
				switch typ := int16(binary.BigEndian.Uint16(r.Key[2:])); typ {
				case 0, 1:
					if err := marker(rb.ProducerID, typ == 1); err != nil {
						return err
					}
				}
				continue
			}
			if err := fn(pid, r.Key, r.Value); err != nil {
				return err
			}
		}
	}
	return nil
}

package txncoord

import (
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/group"
)

// ErrBadRecord is a __transaction_state record that does not decode.
var ErrBadRecord = errors.New("bad __transaction_state record")

// Record is one key/value of the state topic (group's batch builder and
// parser are shared: the layout of the batches is the same).
type Record = group.Record

// TP is a topic partition.
type TP struct {
	Topic     string
	Partition int32
}

// PartitionFor is the state-topic partition of a transactional id:
// abs(javaHashCode(id)) % n, as Kafka (and group.PartitionFor) computes it.
func PartitionFor(transactionalID string, n int32) int32 {
	return group.PartitionFor(transactionalID, n)
}

// meta is what the state topic records of one transactional id (Kafka's
// TransactionMetadata fields the log keeps).
type meta struct {
	producerID int64
	epoch      int16
	timeoutMs  int32
	state      State
	parts      []TP  // sorted, no duplicates
	start      int64 // ms; -1: no transaction started
	lastUpdate int64 // ms
}

// stateKey is the record key of a transactional id (kmsg
// TxnMetadataKey, version 0, as Kafka writes it).
func stateKey(id string) []byte {
	k := kmsg.TxnMetadataKey{Version: 0, TransactionalID: id}
	return k.AppendTo(nil)
}

// stateRecord is the record of id with metadata m: TxnMetadataValue
// version 0 (transactions version 1, as Kafka writes it when the cluster
// has not finalized transaction.version 2).
func stateRecord(id string, m meta) Record {
	v := kmsg.NewTxnMetadataValue()
	v.Version = 0
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = m.producerID, m.epoch, m.timeoutMs
	v.State = kmsg.TransactionState(m.state)
	v.LastUpdateTimestamp, v.StartTimestamp = m.lastUpdate, m.start
	for i := 0; i < len(m.parts); {
		t := kmsg.NewTxnMetadataValueTopic()
		t.Topic = m.parts[i].Topic
		for ; i < len(m.parts) && m.parts[i].Topic == t.Topic; i++ {
			t.Partitions = append(t.Partitions, m.parts[i].Partition)
		}
		v.Topics = append(v.Topics, t)
	}
	if v.Topics == nil {
		v.Topics = []kmsg.TxnMetadataValueTopic{}
	}
	return Record{Key: stateKey(id), Value: v.AppendTo(nil)}
}

// tombstone removes id from the state topic.
func tombstone(id string) Record { return Record{Key: stateKey(id)} }

// decodeRecord decodes a state-topic record; m is nil for a tombstone.
func decodeRecord(key, value []byte) (id string, m *meta, err error) {
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return "", nil, fmt.Errorf("%w: key: %v", ErrBadRecord, err)
	}
	if k.Version != 0 {
		return "", nil, fmt.Errorf("%w: key version %d", ErrBadRecord, k.Version)
	}
	if value == nil {
		return k.TransactionalID, nil, nil
	}
	var v kmsg.TxnMetadataValue
	if err := v.ReadFrom(value); err != nil {
		return "", nil, fmt.Errorf("%w: value of %q: %v", ErrBadRecord, k.TransactionalID, err)
	}
	if v.Version < 0 || v.Version > 1 {
		return "", nil, fmt.Errorf("%w: value of %q: version %d", ErrBadRecord, k.TransactionalID, v.Version)
	}
	if v.State < 0 || v.State > kmsg.TransactionStatePrepareEpochFence {
		return "", nil, fmt.Errorf("%w: value of %q: state %d", ErrBadRecord, k.TransactionalID, v.State)
	}
	m = &meta{
		producerID: v.ProducerID, epoch: v.ProducerEpoch, timeoutMs: v.TimeoutMillis,
		state: State(v.State), start: v.StartTimestamp, lastUpdate: v.LastUpdateTimestamp,
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.parts = append(m.parts, TP{t.Topic, p})
		}
	}
	m.parts = normalize(m.parts)
	return k.TransactionalID, m, nil
}

// normalize sorts tps and drops duplicates.
func normalize(tps []TP) []TP {
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	out := tps[:0]
	for i, tp := range tps {
		if i == 0 || tp != tps[i-1] {
			out = append(out, tp)
		}
	}
	return out
}

// union returns the sorted union of a and b (a is not modified).
func union(a, b []TP) []TP {
	out := make([]TP, 0, len(a)+len(b))
	out = append(out, a...)
	out = append(out, b...)
	return normalize(out)
}

// contains reports whether sorted tps holds tp.
func contains(tps []TP, tp TP) bool {
	i := sort.Search(len(tps), func(i int) bool {
		return tps[i].Topic > tp.Topic || (tps[i].Topic == tp.Topic && tps[i].Partition >= tp.Partition)
	})
	return i < len(tps) && tps[i] == tp
}

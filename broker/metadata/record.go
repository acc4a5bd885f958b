package metadata

import (
	"encoding/json"
	"fmt"
)

// RecordType names a kind of metadata record. The names are part of the
// on-disk format: never rename one.
type RecordType string

// The record types.
const (
	TypeInitCluster      RecordType = "init_cluster"
	TypeRegisterBroker   RecordType = "register_broker"
	TypeCreateTopic      RecordType = "create_topic"
	TypeDeleteTopic      RecordType = "delete_topic"
	TypeCreatePartitions RecordType = "create_partitions"
	TypeAlterTopicConfig RecordType = "alter_topic_config"
	TypeChangePartition  RecordType = "change_partition"
	TypeFenceBroker      RecordType = "fence_broker"
	TypeProducerIDs      RecordType = "producer_ids"
	TypeCreateACLs       RecordType = "create_acls"
	TypeDeleteACLs       RecordType = "delete_acls"
	TypeClientQuota      RecordType = "client_quota"
	// TypeUnregisterBroker removes a broker's registration (Kafka's
	// UnregisterBrokerRecord; quorum.go).
	TypeUnregisterBroker RecordType = "unregister_broker"
)

// Record is one metadata change. Exactly one of the pointer fields is set,
// matching Type. Records are values: Apply never keeps a reference to
// the maps or slices inside one (it copies them).
type Record struct {
	Type RecordType `json:"type"`

	InitCluster      *InitCluster      `json:"init_cluster,omitempty"`
	RegisterBroker   *Broker           `json:"register_broker,omitempty"`
	CreateTopic      *CreateTopic      `json:"create_topic,omitempty"`
	DeleteTopic      *DeleteTopic      `json:"delete_topic,omitempty"`
	CreatePartitions *CreatePartitions `json:"create_partitions,omitempty"`
	AlterTopicConfig *AlterTopicConfig `json:"alter_topic_config,omitempty"`
	ChangePartition  *ChangePartition  `json:"change_partition,omitempty"`
	FenceBroker      *FenceBroker      `json:"fence_broker,omitempty"`
	ProducerIDs      *ProducerIDs      `json:"producer_ids,omitempty"`
	CreateACLs       *CreateACLs       `json:"create_acls,omitempty"`
	DeleteACLs       *DeleteACLs       `json:"delete_acls,omitempty"`
	ClientQuota      *ClientQuota      `json:"client_quota,omitempty"`
	UnregisterBroker *UnregisterBroker `json:"unregister_broker,omitempty"`

	AlterBrokerConfig *AlterBrokerConfig `json:"alter_broker_config,omitempty"`

	UserScramCredential *UserScramCredential `json:"user_scram_credential,omitempty"`
}

// InitCluster fixes the cluster id. It is the first record of a cluster and
// may appear only once.
type InitCluster struct {
	ClusterID string `json:"cluster_id"`
}

// CreateTopic creates a topic with its partition assignment already decided
// (the proposer assigns, so every node applying the record agrees).
type CreateTopic struct {
	Name       string            `json:"name"`
	ID         UUID              `json:"id"`
	Partitions []Partition       `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

// DeleteTopic removes a topic by name; ID must match the live topic's id,
// so a delete can never hit a re-created topic of the same name.
type DeleteTopic struct {
	Name string `json:"name"`
	ID   UUID   `json:"id"`
}

// CreatePartitions appends partitions to a topic. Partitions holds only the
// new ones, in index order continuing the existing ones.
type CreatePartitions struct {
	Name       string      `json:"name"`
	Partitions []Partition `json:"partitions"`
}

// AlterTopicConfig replaces a topic's whole set of config overrides.
// Names not in Configs fall back to the broker defaults.
type AlterTopicConfig struct {
	Name    string            `json:"name"`
	Configs map[string]string `json:"configs"`
}

// ChangePartition sets one partition's leader, leader epoch and ISR, and
// with Replicas set its whole assignment (Replicas, AddingReplicas,
// RemovingReplicas: a reassignment starting, completing or reverted;
// without Replicas the assignment does not change). PartitionEpoch must be the partition's current
// partition epoch + 1, so a change decided against a stale image cannot
// apply; LeaderEpoch must not go backwards. Leader -1 means offline (no
// leader); otherwise the leader is a member of ISR. ISR is a non-empty
// subset of the replicas.
type ChangePartition struct {
	Topic          string  `json:"topic"`
	ID             UUID    `json:"id"`
	Partition      int32   `json:"partition"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leader_epoch"`
	PartitionEpoch int32   `json:"partition_epoch"`
	ISR            []int32 `json:"isr"`

	Replicas         []int32 `json:"replicas,omitempty"`
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
}

// FenceBroker fences (Fenced=true) or unfences a registered broker. A
// fenced broker leads nothing, takes no new replicas, and is left out of
// the brokers clients are told about.
type FenceBroker struct {
	NodeID int32 `json:"node_id"`
	Fenced bool  `json:"fenced"`
}

// ProducerIDs reserves the producer ids below Next (cluster-wide
// InitProducerId blocks, Kafka's KIP-730): the image's next free producer
// id becomes Next, which must be larger than the current one.
type ProducerIDs struct {
	Next int64 `json:"next"`
}

// EncodeRecords returns the JSON form of a batch of records (one Raft
// log entry of the controller).
func EncodeRecords(rs []Record) ([]byte, error) {
	for _, r := range rs {
		if err := r.check(); err != nil {
			return nil, err
		}
	}
	return json.Marshal(rs)
}

// DecodeRecords parses what EncodeRecords wrote.
func DecodeRecords(b []byte) ([]Record, error) {
	var rs []Record
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptRecord, err)
	}
	for _, r := range rs {
		if err := r.check(); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// encodeRecord returns the JSON form of r.
func encodeRecord(r Record) ([]byte, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// decodeRecord parses the JSON form of a record.
func decodeRecord(b []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrCorruptRecord, err)
	}
	if err := r.check(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// check verifies that exactly the payload matching Type is set.
func (r Record) check() error {
	set := 0
	var ok bool
	for _, p := range []struct {
		t   RecordType
		set bool
	}{
		{TypeInitCluster, r.InitCluster != nil},
		{TypeRegisterBroker, r.RegisterBroker != nil},
		{TypeCreateTopic, r.CreateTopic != nil},
		{TypeDeleteTopic, r.DeleteTopic != nil},
		{TypeCreatePartitions, r.CreatePartitions != nil},
		{TypeAlterTopicConfig, r.AlterTopicConfig != nil},
		{TypeChangePartition, r.ChangePartition != nil},
		{TypeFenceBroker, r.FenceBroker != nil},
		{TypeProducerIDs, r.ProducerIDs != nil},
		{TypeCreateACLs, r.CreateACLs != nil},
		{TypeDeleteACLs, r.DeleteACLs != nil},
		{TypeClientQuota, r.ClientQuota != nil},
		{TypeUnregisterBroker, r.UnregisterBroker != nil},
		{TypeUserScramCredential, r.UserScramCredential != nil},
		{TypeAlterBrokerConfig, r.AlterBrokerConfig != nil},
	} {
		if p.set {
			set++
			ok = ok || p.t == r.Type
		}
	}
	if set != 1 || !ok {
		return fmt.Errorf("%w: record of type %q must carry exactly its own payload", ErrCorruptRecord, r.Type)
	}
	return nil
}

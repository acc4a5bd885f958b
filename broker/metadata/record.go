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

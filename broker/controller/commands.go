package controller

import (
	"fmt"
	"maps"

	"weir/broker/acl"
	"weir/broker/metadata"
)

// Command kinds: the metadata changes any broker can ask the leader for.
const (
	KindCreateTopic      = "create_topic"
	KindDeleteTopic      = "delete_topic"
	KindCreatePartitions = "create_partitions"
	KindAlterTopicConfig = "alter_topic_config"
	KindAlterPartition   = "alter_partition"
	KindProducerIDs      = "producer_ids"
	KindCreateACLs       = "create_acls"
	KindDeleteACLs       = "delete_acls"
	KindClientQuotas     = "client_quotas"
	KindElectLeaders     = "elect_leaders"
)

// Command is one request to the controller leader (RPC "Command").
type Command struct {
	Kind  string              `json:"kind"`
	Spec  *metadata.TopicSpec `json:"spec,omitempty"`
	Name  string              `json:"name,omitempty"`
	Total int32               `json:"total,omitempty"`
	// Assignment places new partitions' replicas (CreatePartitions).
	Assignment [][]int32                `json:"assignment,omitempty"`
	Configs    map[string]string        `json:"configs,omitempty"`
	Alter      *metadata.AlterPartition `json:"alter,omitempty"`
	// ACLs to create; ACLFilters select the ACLs to delete.
	ACLs       []acl.Binding `json:"acls,omitempty"`
	ACLFilters []acl.Filter  `json:"acl_filters,omitempty"`
	// Quotas are client quota changes (AlterClientQuotas), validated by
	// the broker that took the request.
	Quotas []metadata.ClientQuota `json:"quotas,omitempty"`
	// Scram are SCRAM credential changes (KindAlterScram).
	Scram []metadata.UserScramCredential `json:"scram,omitempty"`
	// Elect asks for leader elections (KindElectLeaders).
	Elect *metadata.ElectLeaders `json:"elect,omitempty"`
	// Reassign are partition reassignments (KindAlterReassignments).
	Reassign []metadata.Reassignment `json:"reassign,omitempty"`
}

// CommandReply is the leader's answer: the Raft index of the entry that
// holds the change (wait for it to apply locally before reading the
// image), or an error; Topic for topic commands (the topic as created, or
// as it was before deletion).
type CommandReply struct {
	Index uint64          `json:"index"`
	Err   *WireError      `json:"err,omitempty"`
	Topic *metadata.Topic `json:"topic,omitempty"`
	// First is the first producer id of a reserved block.
	First int64 `json:"first,omitempty"`
	// DeletedACLs are, per filter, the ACLs a delete_acls removed.
	DeletedACLs [][]acl.Binding `json:"deleted_acls,omitempty"`
	// Elections are the per-partition results of elect_leaders.
	Elections []metadata.ElectionResult `json:"elections,omitempty"`
	// Reassignments are the per-partition results of alter_reassignments.
	Reassignments []metadata.ReassignResult `json:"reassignments,omitempty"`
}

// HeartbeatArgs is a broker's periodic heartbeat, carrying its
// registration (RPC "Heartbeat").
type HeartbeatArgs struct {
	Broker       metadata.Broker `json:"broker"`
	ShuttingDown bool            `json:"shutting_down,omitempty"`
	// Raft reports this node's replica of the metadata log (quorum.go).
	Raft *RaftReport `json:"raft,omitempty"`
}

// HeartbeatReply tells the broker whether it is fenced after the
// heartbeat was processed, and the index of the entry that changed it.
type HeartbeatReply struct {
	Fenced bool       `json:"fenced"`
	Index  uint64     `json:"index"`
	Err    *WireError `json:"err,omitempty"`
}

// planCommand decides the records of one command against im. The reply's
// Index is filled in by the caller.
func planCommand(im *metadata.Image, c Command) ([]metadata.Record, *metadata.Topic, error) {
	switch c.Kind {
	case KindCreateACLs:
		for _, b := range c.ACLs {
			if err := b.Validate(); err != nil {
				return nil, nil, fmt.Errorf("controller: ACL %s: %v", b, err)
			}
		}
		if r, ok := metadata.BuildCreateACLs(im, c.ACLs); ok {
			return []metadata.Record{r}, nil, nil
		}
		return nil, nil, nil
	case KindDeleteACLs:
		if r, _, ok := metadata.BuildDeleteACLs(im, c.ACLFilters); ok {
			return []metadata.Record{r}, nil, nil
		}
		return nil, nil, nil
	case KindAlterScram:
		rs, err := planScram(im, c.Scram)
		return rs, nil, err
	case KindAlterBrokerConfig:
		rs, err := planBrokerConfig(im, c)
		return rs, nil, err
	case KindProducerIDs:
		if c.Total <= 0 {
			return nil, nil, fmt.Errorf("controller: producer id block of %d", c.Total)
		}
		next := im.NextProducerID() + int64(c.Total)
		return []metadata.Record{{Type: metadata.TypeProducerIDs, ProducerIDs: &metadata.ProducerIDs{Next: next}}}, nil, nil
	case KindCreateTopic:
		if c.Spec == nil {
			return nil, nil, fmt.Errorf("controller: %s without a spec", c.Kind)
		}
		r, err := metadata.BuildCreateTopic(im, *c.Spec)
		if err != nil {
			return nil, nil, err
		}
		ct := r.CreateTopic
		t := &metadata.Topic{Name: ct.Name, ID: ct.ID, Partitions: ct.Partitions, Configs: ct.Configs}
		if c.Spec.ValidateOnly {
			return nil, t, nil
		}
		return []metadata.Record{r}, t, nil
	case KindDeleteTopic:
		t, ok := im.Topic(c.Name)
		if !ok {
			return nil, nil, fmt.Errorf("topic %q: %w", c.Name, metadata.ErrUnknownTopic)
		}
		return []metadata.Record{{Type: metadata.TypeDeleteTopic, DeleteTopic: &metadata.DeleteTopic{Name: t.Name, ID: t.ID}}}, t, nil
	case KindCreatePartitions:
		r, err := metadata.BuildCreatePartitions(im, c.Name, c.Total, c.Assignment)
		if err != nil {
			return nil, nil, err
		}
		return []metadata.Record{r}, nil, nil
	case KindAlterTopicConfig:
		if _, ok := im.Topic(c.Name); !ok {
			return nil, nil, fmt.Errorf("topic %q: %w", c.Name, metadata.ErrUnknownTopic)
		}
		cfg := maps.Clone(c.Configs)
		if cfg == nil {
			cfg = map[string]string{}
		}
		return []metadata.Record{{Type: metadata.TypeAlterTopicConfig, AlterTopicConfig: &metadata.AlterTopicConfig{Name: c.Name, Configs: cfg}}}, nil, nil
	case KindAlterPartition:
		if c.Alter == nil {
			return nil, nil, fmt.Errorf("controller: %s without a request", c.Kind)
		}
		r, err := metadata.BuildAlterPartition(im, *c.Alter)
		if err != nil {
			return nil, nil, err
		}
		return []metadata.Record{r}, nil, nil
	case KindElectLeaders:
		if c.Elect == nil {
			return nil, nil, fmt.Errorf("controller: %s without a request", c.Kind)
		}
		rs, _ := metadata.BuildElectLeaders(im, *c.Elect)
		return rs, nil, nil
	case KindUnregisterBroker:
		rs, err := planUnregister(im, c.Total)
		return rs, nil, err
	case KindClientQuotas:
		rs := make([]metadata.Record, len(c.Quotas))
		for i := range c.Quotas {
			rs[i] = metadata.Record{Type: metadata.TypeClientQuota, ClientQuota: &c.Quotas[i]}
		}
		return rs, nil, nil
	}
	return nil, nil, fmt.Errorf("controller: unknown command %q", c.Kind)
}

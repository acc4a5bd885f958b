package metadata

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Broker is a registered broker node and the address clients reach it at.
type Broker struct {
	NodeID int32   `json:"node_id"`
	Host   string  `json:"host"`
	Port   int32   `json:"port"`
	Rack   *string `json:"rack,omitempty"`
	// Endpoints are the advertised endpoints of the broker's listeners
	// (listener name, security protocol, host, port). Host and Port are
	// the inter-broker listener's. A registration without endpoints (from
	// before listeners had names) serves Host:Port to every listener.
	Endpoints []Endpoint `json:"endpoints,omitempty"`
	// Fenced brokers lead nothing and are not shown to clients; the
	// controller fences a broker that stops heartbeating.
	Fenced bool `json:"fenced,omitempty"`
	// Storage is what the broker's log directories can do, as the broker
	// last reported it: "" (writable: at least one directory takes new
	// partitions), StorageFull or StorageFailed (none does: the best
	// state of its directories). It is the state of every replica of the
	// broker not listed in Dirs.
	Storage StorageState `json:"storage,omitempty"`
	// Dirs are the broker's log directories that cannot write, each with
	// the partitions it holds (weir's form of KIP-858's offline log
	// directories, see broker/logdir): those replicas have the
	// directory's state, the broker's others are unaffected. Empty for a
	// broker whose directories all write (or that predates per-directory
	// reports).
	Dirs []LogDir `json:"log_dirs,omitempty"`
}

// LogDir is one of a broker's log directories that cannot write.
type LogDir struct {
	// Path is the directory as the broker names it (log.dirs).
	Path string `json:"path"`
	// State is StorageFull or StorageFailed.
	State StorageState `json:"state"`
	// Partitions are the partitions it holds: topic name to indexes.
	Partitions map[string][]int32 `json:"partitions,omitempty"`
}

func eqLogDirs(a, b []LogDir) bool {
	return slices.EqualFunc(a, b, func(x, y LogDir) bool {
		return x.Path == y.Path && x.State == y.State && maps.EqualFunc(x.Partitions, y.Partitions, slices.Equal[[]int32])
	})
}

// Endpoint is one advertised listener of a broker.
type Endpoint struct {
	Listener string `json:"listener"`
	Protocol string `json:"protocol"`
	Host     string `json:"host"`
	Port     int32  `json:"port"`
}

// Endpoint returns the broker's advertised host and port on listener: the
// endpoint of that name, or Host:Port for a registration without
// endpoints. ok is false when the broker has no such listener (Kafka then
// leaves the broker out of the answers given on that listener).
func (b Broker) Endpoint(listener string) (host string, port int32, ok bool) {
	if len(b.Endpoints) == 0 {
		return b.Host, b.Port, true
	}
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e.Host, e.Port, true
		}
	}
	return "", 0, false
}

// StorageState is the state of a broker's log directory, reported by the
// broker with its heartbeats (broker/logdir decides it).
type StorageState string

// The storage states. A broker that is not writable leads only the
// partitions no writable in-sync replica can take, and is in no ISR it
// is not the last member of (broker/controller's planner).
const (
	// StorageOK: writes succeed.
	StorageOK StorageState = ""
	// StorageFull: writes fail with ENOSPC; reads work. The broker leaves
	// this state by itself once a probe write succeeds (space freed).
	StorageFull StorageState = "full"
	// StorageFailed: writes or reads failed with an I/O error (EIO), or
	// the file system went read-only (EROFS). Data in the page cache may
	// be lost, so nothing on the directory is trusted until the broker
	// restarts and recovers its logs.
	StorageFailed StorageState = "failed"
)

// Partition is one partition's assignment and leadership. Leader is -1
// while the partition is offline. LeaderEpoch increases with every leader
// change; PartitionEpoch with every change at all (leader or ISR).
//
// During a reassignment (reassign.go) Replicas is the target replicas
// followed by the ones being removed, AddingReplicas the target replicas
// that were not replicas before and RemovingReplicas the replicas not in
// the target (Kafka's PartitionRegistration); both empty otherwise.
type Partition struct {
	Leader           int32   `json:"leader"`
	LeaderEpoch      int32   `json:"leader_epoch"`
	PartitionEpoch   int32   `json:"partition_epoch,omitempty"`
	Replicas         []int32 `json:"replicas"`
	ISR              []int32 `json:"isr"`
	AddingReplicas   []int32 `json:"adding_replicas,omitempty"`
	RemovingReplicas []int32 `json:"removing_replicas,omitempty"`
}

// Topic is a topic in an Image. Topics are immutable once in an image:
// never modify one (or its slices and map); Apply builds new ones.
type Topic struct {
	Name       string
	ID         UUID
	Partitions []Partition
	// Configs are the topic's config overrides (Kafka names); absent
	// names take the broker default.
	Configs map[string]string
}

// Image is an immutable view of the cluster metadata at one point of the
// record sequence. The zero Image is an empty cluster.
type Image struct {
	// Offset counts the records applied to produce this image.
	Offset int64

	clusterID string
	nextPID   int64 // first producer id not reserved yet
	brokers   map[int32]Broker
	topics    map[string]*Topic
	byID      map[UUID]*Topic
	acls      map[UUID]ACL
	quotas    map[string]QuotaEntry // client quotas by quotaKey
	scram     scramUsers
	// brokerConfigs are the dynamic broker config overrides by BROKER
	// resource ("" = cluster default, else a node id).
	brokerConfigs map[string]map[string]string
}

// ClusterID returns the cluster id, "" before InitCluster.
func (im *Image) ClusterID() string { return im.clusterID }

// NextProducerID returns the first producer id no broker has reserved.
func (im *Image) NextProducerID() int64 { return im.nextPID }

// Brokers returns the registered brokers sorted by node id.
func (im *Image) Brokers() []Broker {
	out := make([]Broker, 0, len(im.brokers))
	for _, b := range im.brokers {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NodeID < out[j].NodeID })
	return out
}

// LiveBrokers returns the unfenced brokers sorted by node id.
func (im *Image) LiveBrokers() []Broker {
	all := im.Brokers()
	out := all[:0]
	for _, b := range all {
		if !b.Fenced {
			out = append(out, b)
		}
	}
	return out
}

// Live reports whether id is a registered, unfenced broker.
func (im *Image) Live(id int32) bool {
	b, ok := im.brokers[id]
	return ok && !b.Fenced
}

// Writable reports whether id is live and a log directory of it takes
// writes (a new partition may be placed on it). For an existing replica
// ask ReplicaWritable: its own directory may not.
func (im *Image) Writable(id int32) bool {
	b, ok := im.brokers[id]
	return ok && !b.Fenced && b.Storage == StorageOK
}

// StorageFailed reports whether every log directory of id failed (for
// one replica ask ReplicaFailed).
func (im *Image) StorageFailed(id int32) bool {
	return im.brokers[id].Storage == StorageFailed
}

// ReplicaStorage returns the state of broker id's replica of a partition:
// the state of its directory when the broker reported it among the
// directories that cannot write (Broker.Dirs), else the broker's Storage.
func (im *Image) ReplicaStorage(id int32, topic string, partition int32) StorageState {
	b := im.brokers[id]
	for _, d := range b.Dirs {
		if slices.Contains(d.Partitions[topic], partition) {
			return d.State
		}
	}
	return b.Storage
}

// ReplicaWritable reports whether broker id is live and its replica of
// the partition takes writes (it may lead it and be in its ISR).
func (im *Image) ReplicaWritable(id int32, topic string, partition int32) bool {
	return im.Live(id) && im.ReplicaStorage(id, topic, partition) == StorageOK
}

// ReplicaFailed reports whether broker id's replica of the partition is
// on a failed log directory (offline until the broker restarts).
func (im *Image) ReplicaFailed(id int32, topic string, partition int32) bool {
	return im.ReplicaStorage(id, topic, partition) == StorageFailed
}

// Partition returns one partition of a topic.
func (im *Image) Partition(topic string, p int32) (Partition, bool) {
	t, ok := im.topics[topic]
	if !ok || p < 0 || int(p) >= len(t.Partitions) {
		return Partition{}, false
	}
	return t.Partitions[p], true
}

// Broker returns the broker with the given node id.
func (im *Image) Broker(id int32) (Broker, bool) {
	b, ok := im.brokers[id]
	return b, ok
}

// Topic returns the named topic.
func (im *Image) Topic(name string) (*Topic, bool) {
	t, ok := im.topics[name]
	return t, ok
}

// TopicByID returns the topic with the given id.
func (im *Image) TopicByID(id UUID) (*Topic, bool) {
	t, ok := im.byID[id]
	return t, ok
}

// Topics returns every topic sorted by name.
func (im *Image) Topics() []*Topic {
	out := make([]*Topic, 0, len(im.topics))
	for _, t := range im.topics {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// NumTopics returns the number of topics.
func (im *Image) NumTopics() int { return len(im.topics) }

// Apply validates r against im and returns the image after r. im is left
// unchanged. Errors wrap the package's sentinel errors.
func (im *Image) Apply(r Record) (*Image, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	next := &Image{
		Offset:    im.Offset + 1,
		clusterID: im.clusterID,
		nextPID:   im.nextPID,
		brokers:   im.brokers,
		topics:    im.topics,
		byID:      im.byID,
		acls:      im.acls,
		quotas:    im.quotas,
		scram:     im.scram,

		brokerConfigs: im.brokerConfigs,
	}
	switch r.Type {
	case TypeInitCluster:
		if im.clusterID != "" {
			return nil, fmt.Errorf("%w: cluster id already set to %q", ErrCorruptRecord, im.clusterID)
		}
		if r.InitCluster.ClusterID == "" {
			return nil, fmt.Errorf("%w: empty cluster id", ErrCorruptRecord)
		}
		next.clusterID = r.InitCluster.ClusterID
	case TypeRegisterBroker:
		b := *r.RegisterBroker
		if b.NodeID < 0 {
			return nil, fmt.Errorf("%w: broker node id %d < 0", ErrCorruptRecord, b.NodeID)
		}
		for _, d := range b.Dirs {
			if d.Path == "" || (d.State != StorageFull && d.State != StorageFailed) {
				return nil, fmt.Errorf("%w: broker %d: log directory %q in state %q (want full or failed)", ErrCorruptRecord, b.NodeID, d.Path, d.State)
			}
		}
		next.brokers = maps.Clone(im.brokers)
		if next.brokers == nil {
			next.brokers = map[int32]Broker{}
		}
		next.brokers[b.NodeID] = b
	case TypeCreateTopic:
		ct := r.CreateTopic
		if err := ValidateTopicName(ct.Name); err != nil {
			return nil, err
		}
		if _, ok := im.topics[ct.Name]; ok {
			return nil, fmt.Errorf("topic %q: %w", ct.Name, ErrTopicExists)
		}
		if ct.ID == (UUID{}) {
			return nil, fmt.Errorf("%w: topic %q has no id", ErrCorruptRecord, ct.Name)
		}
		if _, ok := im.byID[ct.ID]; ok {
			return nil, fmt.Errorf("topic %q: id %s: %w", ct.Name, ct.ID, ErrTopicExists)
		}
		if len(ct.Partitions) < 1 {
			return nil, fmt.Errorf("topic %q: %w: 0 partitions", ct.Name, ErrInvalidPartitions)
		}
		// The image outlives the request the record came from, whose
		// strings may alias a connection's read buffer: keep copies.
		t := &Topic{Name: strings.Clone(ct.Name), ID: ct.ID, Partitions: clonePartitions(ct.Partitions), Configs: cloneConfigs(ct.Configs)}
		next.topics, next.byID = im.withTopic(t)
	case TypeDeleteTopic:
		dt := r.DeleteTopic
		t, ok := im.topics[dt.Name]
		if !ok || (dt.ID != (UUID{}) && t.ID != dt.ID) {
			return nil, fmt.Errorf("topic %q: %w", dt.Name, ErrUnknownTopic)
		}
		next.topics = maps.Clone(im.topics)
		next.byID = maps.Clone(im.byID)
		delete(next.topics, t.Name)
		delete(next.byID, t.ID)
	case TypeCreatePartitions:
		cp := r.CreatePartitions
		t, ok := im.topics[cp.Name]
		if !ok {
			return nil, fmt.Errorf("topic %q: %w", cp.Name, ErrUnknownTopic)
		}
		if len(cp.Partitions) < 1 {
			return nil, fmt.Errorf("topic %q: %w: no new partitions", cp.Name, ErrInvalidPartitions)
		}
		nt := *t
		nt.Partitions = append(clonePartitions(t.Partitions), clonePartitions(cp.Partitions)...)
		next.topics, next.byID = im.withTopic(&nt)
	case TypeAlterTopicConfig:
		ac := r.AlterTopicConfig
		t, ok := im.topics[ac.Name]
		if !ok {
			return nil, fmt.Errorf("topic %q: %w", ac.Name, ErrUnknownTopic)
		}
		nt := *t
		nt.Configs = cloneConfigs(ac.Configs)
		next.topics, next.byID = im.withTopic(&nt)
	case TypeChangePartition:
		cp := r.ChangePartition
		t, ok := im.topics[cp.Topic]
		if !ok || (cp.ID != (UUID{}) && t.ID != cp.ID) {
			return nil, fmt.Errorf("topic %q: %w", cp.Topic, ErrUnknownTopic)
		}
		if cp.Partition < 0 || int(cp.Partition) >= len(t.Partitions) {
			return nil, fmt.Errorf("topic %q partition %d: %w", cp.Topic, cp.Partition, ErrUnknownPartition)
		}
		cur := t.Partitions[cp.Partition]
		if err := checkChange(cur, cp); err != nil {
			return nil, fmt.Errorf("topic %q partition %d: %w", cp.Topic, cp.Partition, err)
		}
		np := Partition{
			Leader: cp.Leader, LeaderEpoch: cp.LeaderEpoch, PartitionEpoch: cp.PartitionEpoch,
			Replicas: cur.Replicas, ISR: slices.Clone(cp.ISR),
			AddingReplicas: cur.AddingReplicas, RemovingReplicas: cur.RemovingReplicas,
		}
		if cp.Replicas != nil {
			np.Replicas = slices.Clone(cp.Replicas)
			np.AddingReplicas = nonEmpty(cp.AddingReplicas)
			np.RemovingReplicas = nonEmpty(cp.RemovingReplicas)
		}
		nt := *t
		nt.Partitions = slices.Clone(t.Partitions)
		nt.Partitions[cp.Partition] = np
		next.topics, next.byID = im.withTopic(&nt)
	case TypeProducerIDs:
		if r.ProducerIDs.Next <= im.nextPID {
			return nil, fmt.Errorf("%w: producer ids below %d reserved, asked to move back to %d", ErrCorruptRecord, im.nextPID, r.ProducerIDs.Next)
		}
		next.nextPID = r.ProducerIDs.Next
	case TypeCreateACLs, TypeDeleteACLs:
		acls, err := im.applyACLs(r)
		if err != nil {
			return nil, err
		}
		next.acls = acls
	case TypeClientQuota:
		q, err := im.applyQuota(r.ClientQuota)
		if err != nil {
			return nil, err
		}
		next.quotas = q
	case TypeFenceBroker:
		fb := r.FenceBroker
		b, ok := im.brokers[fb.NodeID]
		if !ok {
			return nil, fmt.Errorf("broker %d: %w", fb.NodeID, ErrUnknownBroker)
		}
		b.Fenced = fb.Fenced
		next.brokers = maps.Clone(im.brokers)
		next.brokers[b.NodeID] = b
	case TypeAlterBrokerConfig:
		bc, err := im.applyBrokerConfig(r.AlterBrokerConfig)
		if err != nil {
			return nil, err
		}
		next.brokerConfigs = bc
	case TypeUnregisterBroker:
		if err := im.applyUnregister(next, r.UnregisterBroker); err != nil {
			return nil, err
		}
	case TypeUserScramCredential:
		if err := im.applyScram(next, r.UserScramCredential); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: unknown record type %q", ErrCorruptRecord, r.Type)
	}
	return next, nil
}

// checkChange validates a partition change against the current state.
func checkChange(cur Partition, cp *ChangePartition) error {
	if cp.PartitionEpoch != cur.PartitionEpoch+1 {
		return fmt.Errorf("%w: change for partition epoch %d, current %d", ErrStalePartitionEpoch, cp.PartitionEpoch-1, cur.PartitionEpoch)
	}
	if cp.LeaderEpoch < cur.LeaderEpoch {
		return fmt.Errorf("%w: leader epoch %d < current %d", ErrFencedLeaderEpoch, cp.LeaderEpoch, cur.LeaderEpoch)
	}
	if len(cp.ISR) == 0 {
		return fmt.Errorf("%w: empty", ErrInvalidISR)
	}
	replicas := cur.Replicas
	if cp.Replicas != nil {
		if err := checkAssignment(cp); err != nil {
			return err
		}
		replicas = cp.Replicas
	}
	seen := map[int32]bool{}
	for _, id := range cp.ISR {
		if !slices.Contains(replicas, id) || seen[id] {
			return fmt.Errorf("%w: %v is not a set of replicas %v", ErrInvalidISR, cp.ISR, replicas)
		}
		seen[id] = true
	}
	if cp.Leader != -1 && !seen[cp.Leader] {
		return fmt.Errorf("%w: leader %d not in %v", ErrInvalidISR, cp.Leader, cp.ISR)
	}
	return nil
}

// withTopic returns copies of the topic maps with t added or replaced.
func (im *Image) withTopic(t *Topic) (map[string]*Topic, map[UUID]*Topic) {
	topics := maps.Clone(im.topics)
	byID := maps.Clone(im.byID)
	if topics == nil {
		topics = map[string]*Topic{}
		byID = map[UUID]*Topic{}
	}
	topics[t.Name] = t
	byID[t.ID] = t
	return topics, byID
}

// Records returns a minimal sequence of records that rebuilds im from an
// empty image (a snapshot).
func (im *Image) Records() []Record {
	var out []Record
	if im.clusterID != "" {
		out = append(out, Record{Type: TypeInitCluster, InitCluster: &InitCluster{ClusterID: im.clusterID}})
	}
	if im.nextPID > 0 {
		out = append(out, Record{Type: TypeProducerIDs, ProducerIDs: &ProducerIDs{Next: im.nextPID}})
	}
	for _, b := range im.Brokers() {
		b := b
		out = append(out, Record{Type: TypeRegisterBroker, RegisterBroker: &b})
	}
	if len(im.acls) > 0 {
		out = append(out, Record{Type: TypeCreateACLs, CreateACLs: &CreateACLs{ACLs: im.ACLs()}})
	}
	for _, t := range im.Topics() {
		out = append(out, Record{Type: TypeCreateTopic, CreateTopic: &CreateTopic{
			Name: t.Name, ID: t.ID, Partitions: t.Partitions, Configs: t.Configs,
		}})
	}
	out = append(out, im.scramRecords()...)
	out = append(out, im.brokerConfigRecords()...)
	return append(out, im.quotaRecords()...)
}

func clonePartitions(ps []Partition) []Partition {
	out := make([]Partition, len(ps))
	for i, p := range ps {
		out[i] = Partition{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, Replicas: slices.Clone(p.Replicas), ISR: slices.Clone(p.ISR),
			AddingReplicas: nonEmpty(p.AddingReplicas), RemovingReplicas: nonEmpty(p.RemovingReplicas)}
	}
	return out
}

// cloneConfigs deep-copies c, strings included (they may alias a request
// buffer).
func cloneConfigs(c map[string]string) map[string]string {
	out := make(map[string]string, len(c))
	for k, v := range c {
		out[strings.Clone(k)] = strings.Clone(v)
	}
	return out
}

// ValidateTopicName checks Kafka's topic name rules: 1 to 249 characters
// of [a-zA-Z0-9._-], not "." or "..".
func ValidateTopicName(name string) error {
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("%w: %q", ErrInvalidTopic, name)
	}
	if len(name) > 249 {
		return fmt.Errorf("%w: %q is longer than 249 characters", ErrInvalidTopic, name[:20]+"...")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q contains %q (allowed: a-z A-Z 0-9 . _ -)", ErrInvalidTopic, name, c)
		}
	}
	return nil
}

// Assign spreads partitions [first, first+count) over the brokers round
// robin, replicationFactor replicas each, the first replica leading.
func Assign(brokers []Broker, first, count int32, replicationFactor int16) ([]Partition, error) {
	if len(brokers) == 0 {
		return nil, ErrNoBrokers
	}
	if replicationFactor < 1 || int(replicationFactor) > len(brokers) {
		return nil, fmt.Errorf("%w: %d with %d brokers", ErrInvalidReplicationFactor, replicationFactor, len(brokers))
	}
	if count < 1 {
		return nil, fmt.Errorf("%w: %d", ErrInvalidPartitions, count)
	}
	out := make([]Partition, count)
	for i := range out {
		p := first + int32(i)
		reps := make([]int32, replicationFactor)
		for r := range reps {
			reps[r] = brokers[(int(p)+r)%len(brokers)].NodeID
		}
		out[i] = Partition{Leader: reps[0], Replicas: reps, ISR: slices.Clone(reps)}
	}
	return out, nil
}

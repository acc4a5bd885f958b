package topicconfig

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"
)

// Broker-level config names weir reads directly.
const (
	BrokerAutoCreateTopicsEnable   = "auto.create.topics.enable"
	BrokerNumPartitions            = "num.partitions"
	BrokerDefaultReplicationFactor = "default.replication.factor"
	BrokerMessageMaxBytes          = "message.max.bytes"
	BrokerMinInsyncReplicas        = "min.insync.replicas"
	BrokerDeleteTopicEnable        = "delete.topic.enable"
	BrokerProducerIDExpirationMs   = "producer.id.expiration.ms"
	BrokerTransactionalIDExpiry    = "transactional.id.expiration.ms"
	BrokerNodeID                   = "node.id"
	BrokerLogDirs                  = "log.dirs"
	BrokerListeners                = "listeners"
	BrokerAdvertisedListeners      = "advertised.listeners"

	BrokerAutoLeaderRebalanceEnable           = "auto.leader.rebalance.enable"
	BrokerLeaderImbalanceCheckIntervalSeconds = "leader.imbalance.check.interval.seconds"
	BrokerLeaderImbalancePerBrokerPercentage  = "leader.imbalance.per.broker.percentage"

	// The replication throttles (Kafka's QuotaConfig.brokerQuotaConfigs):
	// dynamic only, bytes per second, default Long.MAX_VALUE (none).
	BrokerLeaderReplicationThrottledRate   = "leader.replication.throttled.rate"
	BrokerFollowerReplicationThrottledRate = "follower.replication.throttled.rate"
	BrokerReplicaAlterLogDirsIOMaxBytes    = "replica.alter.log.dirs.io.max.bytes.per.second"
)

// brokerDefs are the broker configs weir knows: the topic-config synonyms
// (log.*) plus the broker settings weir reads or reports. Those in
// dynamicNames (dynamic.go) may also be changed at runtime.
var brokerDefs = append([]Def{
	{Name: BrokerAdvertisedListeners, Type: TypeString, Doc: "Listeners advertised to clients (default: listeners)."},
	{Name: BrokerAutoCreateTopicsEnable, Type: TypeBoolean, Default: "true", HasDefault: true, Honoured: true,
		Doc: "Create a topic when a client asks for its metadata and it does not exist."},
	{Name: BrokerAutoLeaderRebalanceEnable, Type: TypeBoolean, Default: "true", HasDefault: true, Honoured: true,
		Doc: "The controller moves leadership back to preferred replicas every leader.imbalance.check.interval.seconds."},
	{Name: "compression.gzip.level", Type: TypeInt, Default: "-1", HasDefault: true, check: gzipLevel, Doc: "Default gzip level."},
	{Name: "compression.lz4.level", Type: TypeInt, Default: "9", HasDefault: true, check: between(1, 17), Doc: "Default lz4 level."},
	{Name: "compression.type", Type: TypeString, Default: "producer", HasDefault: true,
		check: oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), Doc: "Default compression.type of topics."},
	{Name: "compression.zstd.level", Type: TypeInt, Default: "3", HasDefault: true, check: between(-131072, 22), Doc: "Default zstd level."},
	{Name: BrokerDefaultReplicationFactor, Type: TypeInt, Default: "1", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "Replication factor of topics created without one (and auto-created topics)."},
	{Name: BrokerDeleteTopicEnable, Type: TypeBoolean, Default: "true", HasDefault: true, Honoured: true,
		Doc: "Allow DeleteTopics."},
	{Name: "group.consumer.assignors", Type: TypeList, Default: "uniform,range", HasDefault: true, Honoured: true,
		Doc: "Server-side assignors of consumer-protocol groups (KIP-848): uniform, range (or their Kafka class names); the first is the default."},
	{Name: "group.consumer.heartbeat.interval.ms", Type: TypeInt, Default: "5000", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "Heartbeat interval given to consumer-protocol group members."},
	{Name: "group.consumer.max.size", Type: TypeInt, Default: "2147483647", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "Most members one consumer-protocol group may have."},
	{Name: "group.consumer.session.timeout.ms", Type: TypeInt, Default: "45000", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "Session timeout of consumer-protocol group members."},
	{Name: "group.initial.rebalance.delay.ms", Type: TypeInt, Default: "3000", HasDefault: true, Honoured: true, check: atLeast(0),
		Doc: "How long the group coordinator waits for more members before the first rebalance of a new group."},
	{Name: "group.max.session.timeout.ms", Type: TypeInt, Default: "1800000", HasDefault: true, Honoured: true, check: atLeast(0),
		Doc: "Largest session timeout a group member may ask for."},
	{Name: "group.max.size", Type: TypeInt, Default: "2147483647", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "Most members one consumer group may have."},
	{Name: "group.min.session.timeout.ms", Type: TypeInt, Default: "6000", HasDefault: true, Honoured: true, check: atLeast(0),
		Doc: "Smallest session timeout a group member may ask for."},
	{Name: BrokerLeaderImbalanceCheckIntervalSeconds, Type: TypeLong, Default: "300", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "How often the controller checks for partitions not led by their preferred replica (auto.leader.rebalance.enable)."},
	{Name: BrokerLeaderImbalancePerBrokerPercentage, Type: TypeInt, Default: "10", HasDefault: true, check: atLeast(0),
		Doc: "Accepted and not used, as in KRaft: every imbalanced partition is moved back."},
	{Name: BrokerListeners, Type: TypeString, Doc: "Addresses the broker listens on."},
	{Name: "log.cleaner.backoff.ms", Type: TypeLong, Default: "15000", HasDefault: true, Honoured: true, check: atLeast(0),
		Doc: "Sleep between two rounds of the log cleaner (read before every round; a dynamic change starts a round at once)."},
	{Name: "log.cleaner.dedupe.buffer.size", Type: TypeLong, Default: "134217728", HasDefault: true, Honoured: true,
		Doc: "Memory for the keys one cleaning pass dedupes, shared by log.cleaner.threads (24 bytes a key as Kafka's offset map); a log with more keys is cleaned over several passes."},
	{Name: "log.cleaner.io.buffer.load.factor", Type: TypeDouble, Default: "0.9", HasDefault: true, Honoured: true,
		Doc: "How full the dedupe buffer is filled before a pass stops taking segments."},
	{Name: "log.cleaner.io.buffer.size", Type: TypeInt, Default: "524288", HasDefault: true, check: atLeast(0),
		Doc: "Accepted; no effect (weir's cleaner reads segments through the file cache and writes each rewritten segment whole)."},
	{Name: "log.cleaner.io.max.bytes.per.second", Type: TypeDouble, Default: "1.7976931348623157E308", HasDefault: true, Honoured: true,
		Doc: "Most bytes per second the log cleaner reads plus writes (it sleeps between segments to stay under)."},
	{Name: "log.cleaner.threads", Type: TypeInt, Default: "1", HasDefault: true, Honoured: true, check: atLeast(0),
		Doc: "Divides log.cleaner.dedupe.buffer.size as in Kafka; weir cleans on one goroutine per broker whatever the value."},
	{Name: "log.cleaner.delete.retention.ms", Type: TypeLong, Default: "86400000", HasDefault: true, Honoured: true, check: atLeast(0), Doc: "Default delete.retention.ms."},
	{Name: "log.cleaner.max.compaction.lag.ms", Type: TypeLong, Default: maxLongString, HasDefault: true, Honoured: true, check: atLeast(1), Doc: "Default max.compaction.lag.ms."},
	{Name: "log.cleaner.min.cleanable.ratio", Type: TypeDouble, Default: "0.5", HasDefault: true, Honoured: true, check: doubleBetween(0, 1), Doc: "Default min.cleanable.dirty.ratio."},
	{Name: "log.cleaner.min.compaction.lag.ms", Type: TypeLong, Default: "0", HasDefault: true, Honoured: true, check: atLeast(0), Doc: "Default min.compaction.lag.ms."},
	{Name: "log.cleanup.policy", Type: TypeList, Default: "delete", HasDefault: true, check: listOf(cleanupPolicyCompact, cleanupPolicyDelete), Doc: "Default cleanup.policy."},
	{Name: BrokerLogDirs, Type: TypeString, Doc: "The data directory."},
	{Name: "log.flush.interval.messages", Type: TypeLong, Default: maxLongString, HasDefault: true, check: atLeast(1), Doc: "Default flush.messages."},
	{Name: "log.flush.interval.ms", Type: TypeLong, Doc: "Default flush.ms (if unset: log.flush.scheduler.interval.ms)."},
	{Name: "log.flush.scheduler.interval.ms", Type: TypeLong, Default: maxLongString, HasDefault: true, Doc: "How often the flusher checks whether a log needs flushing."},
	{Name: "log.index.interval.bytes", Type: TypeInt, Default: "4096", HasDefault: true, check: atLeast(0), Doc: "Default index.interval.bytes."},
	{Name: "log.index.size.max.bytes", Type: TypeInt, Default: "10485760", HasDefault: true, check: atLeast(4), Doc: "Default segment.index.bytes."},
	{Name: "log.local.retention.bytes", Type: TypeLong, Default: "-2", HasDefault: true, check: atLeast(-2), Doc: "Default local.retention.bytes."},
	{Name: "log.local.retention.ms", Type: TypeLong, Default: "-2", HasDefault: true, check: atLeast(-2), Doc: "Default local.retention.ms."},
	{Name: "log.message.downconversion.enable", Type: TypeBoolean, Default: "true", HasDefault: true, Doc: "Deprecated; no effect."},
	{Name: "log.message.format.version", Type: TypeString, Default: "3.0-IV1", HasDefault: true, Doc: "Deprecated; no effect."},
	{Name: "log.message.timestamp.after.max.ms", Type: TypeLong, Default: maxLongString, HasDefault: true, check: atLeast(0), Doc: "Default message.timestamp.after.max.ms."},
	{Name: "log.message.timestamp.before.max.ms", Type: TypeLong, Default: maxLongString, HasDefault: true, check: atLeast(0), Doc: "Default message.timestamp.before.max.ms."},
	{Name: "log.message.timestamp.difference.max.ms", Type: TypeLong, Default: maxLongString, HasDefault: true, check: atLeast(0), Doc: "Deprecated; no effect."},
	{Name: "log.message.timestamp.type", Type: TypeString, Default: timestampCreateTime, HasDefault: true,
		check: oneOf(timestampCreateTime, timestampLogAppendTime), Doc: "Default message.timestamp.type."},
	{Name: "log.preallocate", Type: TypeBoolean, Default: "false", HasDefault: true, Doc: "Default preallocate."},
	{Name: "log.retention.bytes", Type: TypeLong, Default: "-1", HasDefault: true, Doc: "Default retention.bytes."},
	{Name: "log.retention.check.interval.ms", Type: TypeLong, Default: "300000", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "How often logs are checked for segments to delete by retention."},
	{Name: "log.retention.hours", Type: TypeInt, Default: "168", HasDefault: true, Doc: "Default retention in hours (after log.retention.ms and log.retention.minutes)."},
	{Name: "log.retention.minutes", Type: TypeInt, Doc: "Default retention in minutes (after log.retention.ms)."},
	{Name: "log.retention.ms", Type: TypeLong, Doc: "Default retention.ms; -1 means no time limit."},
	{Name: "log.roll.hours", Type: TypeInt, Default: "168", HasDefault: true, check: atLeast(1), Doc: "Default segment roll time in hours (after log.roll.ms)."},
	{Name: "log.roll.jitter.hours", Type: TypeInt, Default: "0", HasDefault: true, check: atLeast(0), Doc: "Default segment.jitter.ms in hours."},
	{Name: "log.roll.jitter.ms", Type: TypeLong, Doc: "Default segment.jitter.ms."},
	{Name: "log.roll.ms", Type: TypeLong, Doc: "Default segment.ms."},
	{Name: "log.segment.bytes", Type: TypeInt, Default: "1073741824", HasDefault: true, check: atLeast(MinSegmentBytes), Doc: "Default segment.bytes."},
	{Name: "log.segment.delete.delay.ms", Type: TypeLong, Default: "60000", HasDefault: true, check: atLeast(0), Doc: "Default file.delete.delay.ms."},
	{Name: BrokerMessageMaxBytes, Type: TypeInt, Default: "1048588", HasDefault: true, Honoured: true, check: atLeast(0),
		Doc: "Largest record batch the broker accepts (default max.message.bytes of topics)."},
	{Name: "offset.metadata.max.bytes", Type: TypeInt, Default: "4096", HasDefault: true, Honoured: true, check: atLeast(0),
		Doc: "Largest metadata string stored with a committed offset."},
	{Name: "offsets.retention.check.interval.ms", Type: TypeLong, Default: "600000", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "How often expired committed offsets are removed."},
	{Name: "offsets.retention.minutes", Type: TypeInt, Default: "10080", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "How long committed offsets of an empty group are kept."},
	{Name: "offsets.topic.num.partitions", Type: TypeInt, Default: "50", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "Partitions of __consumer_offsets (fixed once the topic exists)."},
	{Name: "offsets.topic.segment.bytes", Type: TypeInt, Default: "104857600", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "Segment size of __consumer_offsets."},
	{Name: BrokerMinInsyncReplicas, Type: TypeInt, Default: "1", HasDefault: true, Honoured: true, check: atLeast(1), Doc: "Default min.insync.replicas."},
	{Name: BrokerNodeID, Type: TypeInt, Default: "-1", HasDefault: true, Doc: "This broker's node id."},
	{Name: BrokerNumPartitions, Type: TypeInt, Default: "1", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "Partition count of topics created without one (and auto-created topics)."},
	{Name: BrokerProducerIDExpirationMs, Type: TypeInt, Default: "86400000", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "How long a partition keeps an idle producer's idempotence state."},
	{Name: "replica.lag.time.max.ms", Type: TypeLong, Default: "30000", HasDefault: true, Doc: "How long a follower may lag before leaving the ISR."},
	{Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Type: TypeInt, Default: "10000", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "How often the transaction coordinator aborts transactions open past their timeout."},
	{Name: "transaction.max.timeout.ms", Type: TypeInt, Default: "900000", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "Largest transaction.timeout.ms a transactional producer may ask for."},
	{Name: "transaction.partition.verification.enable", Type: TypeBoolean, Default: "true", HasDefault: true, Honoured: true,
		Doc: "Whether a partition leader asks the transaction coordinator that a transactional produce's partition is in the transaction (KIP-890 part 1)."},
	{Name: "transaction.remove.expired.transaction.cleanup.interval.ms", Type: TypeInt, Default: "3600000", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "How often expired transactional ids are removed."},
	{Name: "transaction.state.log.min.isr", Type: TypeInt, Default: "2", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "min.insync.replicas of __transaction_state (capped by its replication factor)."},
	{Name: "transaction.state.log.num.partitions", Type: TypeInt, Default: "50", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "Partitions of __transaction_state (fixed once the topic exists)."},
	{Name: "transaction.state.log.replication.factor", Type: TypeShort, Default: "3", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "Replication factor of __transaction_state (capped by the live brokers when it is created)."},
	{Name: "transaction.state.log.segment.bytes", Type: TypeInt, Default: "104857600", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "Segment size of __transaction_state."},
	{Name: BrokerTransactionalIDExpiry, Type: TypeInt, Default: "604800000", HasDefault: true, Honoured: true, check: atLeast(1),
		Doc: "How long an idle transactional id is kept."},
	{Name: "unclean.leader.election.enable", Type: TypeBoolean, Default: "false", HasDefault: true, Doc: "Default unclean.leader.election.enable."},
}, slices.Concat(securityDefs, authorizerDefs, quotaDefs, throttleDefs)...)

var brokerByName = func() map[string]*Def {
	m := make(map[string]*Def, len(brokerDefs))
	for i := range brokerDefs {
		m[brokerDefs[i].Name] = &brokerDefs[i]
	}
	return m
}()

// BrokerDef returns the definition of broker config name.
func BrokerDef(name string) (*Def, bool) {
	d, ok := brokerByName[name]
	return d, ok
}

// BrokerNames returns every broker config name weir knows, sorted.
func BrokerNames() []string {
	out := make([]string, 0, len(brokerDefs))
	for i := range brokerDefs {
		out = append(out, brokerDefs[i].Name)
	}
	sort.Strings(out)
	return out
}

// Broker is a broker's configuration: Kafka's defaults overridden by what
// was set at startup (flags, files), and, for a Broker made by NewBroker,
// by the dynamic configs the metadata holds (see dynamic.go: SetDynamic,
// OnChange). Safe for concurrent use; its static part never changes.
type Broker struct {
	static map[string]string
	live   *live   // nil for Defaults() and snapshots
	frozen *layers // a snapshot's dynamic layers
}

var defaultBroker = &Broker{static: map[string]string{}}

// Defaults returns a Broker with Kafka's defaults and nothing set.
func Defaults() *Broker { return defaultBroker }

// NewBroker validates static broker configs (Kafka names, e.g.
// "log.retention.hours": "24", "num.partitions": "3", "node.id": "1") and
// returns the Broker. Errors wrap ErrUnknownConfig or ErrInvalidValue and
// name the key.
func NewBroker(static map[string]string) (*Broker, error) {
	b := &Broker{static: make(map[string]string, len(static)), live: &live{}}
	for name, v := range static {
		d, ok := brokerByName[name]
		override := false
		if !ok {
			d, ok = listenerOverride(name)
			if !ok {
				d, ok = adminHTTPDef(name)
			}
			override = ok
		}
		if !ok {
			return nil, fmt.Errorf("%w: unknown broker config name: %s", ErrUnknownConfig, name)
		}
		if err := d.Validate(v); err != nil {
			if override {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			return nil, err
		}
		b.static[name] = v
	}
	return b, nil
}

// Value returns broker config name's effective value and source (dynamic
// per-broker > dynamic cluster default > static > default); ok is false
// when the config has none of these.
func (b *Broker) Value(name string) (value string, src Source, ok bool) {
	if v, src, set := b.lookup(name); set {
		return v, src, true
	}
	if d, known := brokerByName[name]; known && d.HasDefault {
		return d.Default, SourceDefault, true
	}
	return "", SourceUnknown, false
}

func (b *Broker) int64Value(name string) int64 {
	v, _, _ := b.Value(name)
	n, _ := parseInt(v, 64)
	return n
}

func (b *Broker) boolValue(name string) bool {
	v, _, _ := b.Value(name)
	t, _ := parseBool(v)
	return t
}

// NumPartitions is num.partitions: the partition count of topics created
// without one.
func (b *Broker) NumPartitions() int32 { return int32(b.int64Value(BrokerNumPartitions)) }

// DefaultReplicationFactor is default.replication.factor.
func (b *Broker) DefaultReplicationFactor() int16 {
	return int16(b.int64Value(BrokerDefaultReplicationFactor))
}

// AutoCreateTopics is auto.create.topics.enable.
func (b *Broker) AutoCreateTopics() bool { return b.boolValue(BrokerAutoCreateTopicsEnable) }

// DeleteTopicEnable is delete.topic.enable.
func (b *Broker) DeleteTopicEnable() bool { return b.boolValue(BrokerDeleteTopicEnable) }

// MessageMaxBytes is message.max.bytes.
func (b *Broker) MessageMaxBytes() int32 { return int32(b.int64Value(BrokerMessageMaxBytes)) }

// RetentionCheckInterval is log.retention.check.interval.ms.
func (b *Broker) RetentionCheckInterval() time.Duration {
	return msDuration(b.int64Value("log.retention.check.interval.ms"))
}

// CleanerSettings are the log cleaner's broker-wide settings (Kafka's
// CleanerConfig), the same fields as broker/log's CleanerConfig.
type CleanerSettings struct {
	Backoff             time.Duration // log.cleaner.backoff.ms
	DedupeBufferSize    int64         // log.cleaner.dedupe.buffer.size
	Threads             int           // log.cleaner.threads
	IOBufferLoadFactor  float64       // log.cleaner.io.buffer.load.factor
	IOMaxBytesPerSecond float64       // log.cleaner.io.max.bytes.per.second
}

// Cleaner returns the log cleaner's effective settings now (dynamic ones
// included: the cleaner calls it before every round).
func (b *Broker) Cleaner() CleanerSettings {
	f := func(name string) float64 {
		v, _, _ := b.Value(name)
		x, _ := parseDouble(v)
		return x
	}
	return CleanerSettings{
		Backoff:             msDuration(b.int64Value("log.cleaner.backoff.ms")),
		DedupeBufferSize:    b.int64Value("log.cleaner.dedupe.buffer.size"),
		Threads:             int(b.int64Value("log.cleaner.threads")),
		IOBufferLoadFactor:  f("log.cleaner.io.buffer.load.factor"),
		IOMaxBytesPerSecond: f("log.cleaner.io.max.bytes.per.second"),
	}
}

// ProducerIDExpiration is producer.id.expiration.ms: how long a partition
// keeps the idempotence state of a producer that has not written to it.
func (b *Broker) ProducerIDExpiration() time.Duration {
	return msDuration(b.int64Value(BrokerProducerIDExpirationMs))
}

// Describe returns DescribeConfigs entries for this broker (a node id
// resource): every known broker config (names nil or empty) or only those
// named (unknown names are skipped, as Kafka does), plus the dynamic-only
// and custom names set dynamically. Values and sources are the effective
// ones; synonyms are listed as Kafka's ConfigHelper does (see synonyms).
// Configs that cannot change at runtime are read-only.
func (b *Broker) Describe(names []string, includeSynonyms, includeDocs bool) []Entry {
	l := b.dyn()
	var want []string
	if len(names) == 0 {
		for _, n := range BrokerNames() {
			if d := brokerByName[n]; !d.dynamicOnly {
				want = append(want, n)
			}
		}
		for _, m := range []map[string]string{l.broker, l.cluster} {
			for n := range m {
				if d, known := brokerByName[n]; (!known || d.dynamicOnly) && !slices.Contains(want, n) {
					want = append(want, n)
				}
			}
		}
		slices.Sort(want)
	} else {
		for _, n := range names {
			_, known := brokerByName[n]
			_, inB := l.broker[n]
			_, inC := l.cluster[n]
			if known || inB || inC {
				want = append(want, n)
			}
		}
	}
	out := make([]Entry, 0, len(want))
	for _, name := range want {
		out = append(out, b.describeOne(name, true, includeSynonyms, includeDocs))
	}
	return out
}

// DescribeDefault returns DescribeConfigs entries for the cluster default
// resource (""): only the configs set there, with their dynamic default
// values and only DYNAMIC_DEFAULT_BROKER_CONFIG synonyms, as Kafka does.
func (b *Broker) DescribeDefault(names []string, includeSynonyms, includeDocs bool) []Entry {
	l := b.dyn()
	var want []string
	for _, n := range slices.Sorted(maps.Keys(l.cluster)) {
		if len(names) == 0 || slices.Contains(names, n) {
			want = append(want, n)
		}
	}
	out := make([]Entry, 0, len(want))
	for _, name := range want {
		out = append(out, b.describeOne(name, false, includeSynonyms, includeDocs))
	}
	return out
}

// describeOne is Kafka's ConfigHelper.createBrokerConfigEntry.
func (b *Broker) describeOne(name string, perBroker, includeSynonyms, includeDocs bool) Entry {
	d, known := brokerByName[name]
	e := Entry{Name: name, ReadOnly: !dynamicNames[name], Type: TypeUnknown}
	if known {
		e.Type = d.Type
	}
	// A custom name has no type, and Kafka treats what it cannot type as
	// sensitive (KafkaConfig.maybeSensitive).
	e.Sensitive = !known || e.Type == TypePassword
	syns := b.synonyms(name, brokerSynonyms(name), e.Sensitive)
	if !perBroker {
		syns = slices.DeleteFunc(syns, func(s EntrySynonym) bool { return s.Source != SourceDynamicDefaultBroker })
	}
	e.Source = SourceDefault
	if len(syns) > 0 {
		e.Source = syns[0].Source
	}
	if perBroker {
		if v, _, ok := b.Value(name); ok {
			e.Value = strPtr(v)
		}
	} else if v, ok := b.dyn().cluster[name]; ok {
		e.Value = strPtr(v)
	}
	if e.Sensitive {
		e.Value = nil // Kafka shows no value of a password
	}
	if includeDocs && known {
		e.Doc = d.Doc
	}
	if includeSynonyms {
		e.Synonyms = syns
	}
	return e
}

// brokerSynonyms is Kafka's DynamicBrokerConfig.brokerConfigSynonyms: the
// names that set the same broker config, in precedence order.
func brokerSynonyms(name string) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	}
	return []string{name}
}

// synonyms is Kafka's ConfigHelper.configSynonyms for name: each source in
// precedence order (dynamic per-broker, dynamic default, static, default)
// over all the synonym names, then everything before name's own first
// entry dropped.
func (b *Broker) synonyms(name string, all []string, sensitive bool) []EntrySynonym {
	l := b.dyn()
	var out []EntrySynonym
	add := func(n, v string, src Source) {
		sv := strPtr(v)
		if sensitive {
			sv = nil
		}
		out = append(out, EntrySynonym{Name: n, Value: sv, Source: src})
	}
	for _, layer := range []struct {
		m   map[string]string
		src Source
	}{{l.broker, SourceDynamicBroker}, {l.cluster, SourceDynamicDefaultBroker}, {b.static, SourceStaticBroker}} {
		for _, n := range all {
			if v, ok := layer.m[n]; ok {
				add(n, v, layer.src)
			}
		}
	}
	for _, n := range all {
		if d, ok := brokerByName[n]; ok && d.HasDefault && !d.dynamicOnly {
			add(n, d.Default, SourceDefault)
		}
	}
	for len(out) > 0 && out[0].Name != name {
		out = out[1:]
	}
	return out
}

func strPtr(s string) *string { return &s }

// msDuration converts Kafka milliseconds to a Duration, saturating instead
// of overflowing (Kafka's Long.MAX_VALUE "never" stays "never").
func msDuration(ms int64) time.Duration {
	const maxMs = int64(1<<63-1) / int64(time.Millisecond)
	switch {
	case ms > maxMs:
		return time.Duration(1<<63 - 1)
	case ms < -maxMs:
		return -time.Duration(1<<63 - 1)
	}
	return time.Duration(ms) * time.Millisecond
}

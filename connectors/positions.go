package connectors

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/internal/kafkaclient"
	"weir/internal/kafkaclient/partition"
)

// The offsets topic lost (deleted, emptied) and the ways on.
//
// A running task checks, before each commit, that the offsets topic
// exists (keepOffsetsTopic): one deleted under it
// is created again compacted (cleanup.policy=compact, as at start) and
// the task writes every position it holds again, so the producer's
// auto-creation (with the broker's defaults, cleanup.policy=delete,
// which would drop positions after retention.ms) does not recreate it.
//
// A task starting without its positions cannot tell a topic that lost
// them from a first run, except an exactly-once task by its fencing
// epoch: SourceOptions.RequirePositions makes such a task fail with
// ErrPositionsLost. RecoverPositions rebuilds the positions from the
// records the source wrote (each carries its position in the
// SourceHeader); ResetPositions writes an empty scan record, so the next
// start begins from scratch on purpose.

// keepOffsetsTopic, called before every commit, recreates a deleted
// offsets topic, compacted, and marks every position of the task to be
// written again, also when the topic was recreated by someone else
// (another task, another worker, a producer's auto-creation: then its
// cleanup.policy is set to compact): its topic id changed. The client
// forgets the old topic (kgo fails produces to a recreated topic with
// UNKNOWN_TOPIC_ID until it is purged); no record for it is buffered
// between commits. Errors are left to the commit's produce.
func (t *sourceTask) keepOffsetsTopic(ctx context.Context) {
	otopic := t.rt.offsetsTopic()
	id, err := t.offsetsTopicID(ctx)
	compact := "compact"
	switch {
	case err == nil:
		if id != t.otID && t.otID != ([16]byte{}) {
			t.log.Warn("the source positions topic was deleted and created again; storing this source's positions in it again",
				zap.String("topic", otopic))
			t.cl.PurgeTopicsFromProducing(otopic)
			t.unstorePositions()
			t.compactOffsetsTopic(ctx)
		}
		t.otID = id
		return
	case !errors.Is(err, kerr.UnknownTopicOrPartition):
		return
	}
	t.log.Warn("the source positions topic was deleted; creating it again (cleanup.policy=compact) and storing this source's positions in it again",
		zap.String("topic", otopic))
	t.cl.PurgeTopicsFromProducing(otopic)
	t.unstorePositions()
	if err := ensureTopic(ctx, t.adm, otopic, 1, map[string]*string{"cleanup.policy": &compact}); err != nil {
		t.log.Warn("creating the source positions topic again", zap.String("topic", otopic), zap.Error(err))
	}
	// Another client may have created it first (ensureTopic takes
	// TOPIC_ALREADY_EXISTS as done): a producer's auto-creation, with
	// cleanup.policy=delete.
	t.compactOffsetsTopic(ctx)
	// The id of the topic the positions go to now: a later change of it
	// is another deletion.
	t.otID, _ = t.offsetsTopicID(ctx)
}

// compactOffsetsTopic sets cleanup.policy=compact on the offsets topic
// (a recreated one may have the broker's default, delete).
func (t *sourceTask) compactOffsetsTopic(ctx context.Context) {
	compact := "compact"
	otopic := t.rt.offsetsTopic()
	if _, err := t.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: &compact}}, otopic); err != nil {
		t.log.Warn("setting cleanup.policy=compact on the source positions topic", zap.String("topic", otopic), zap.Error(err))
	}
}

// offsetsTopicID asks a broker for the offsets topic's id, without
// creating the topic (UNKNOWN_TOPIC_OR_PARTITION if it does not exist).
func (t *sourceTask) offsetsTopicID(ctx context.Context) ([16]byte, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(t.rt.offsetsTopic())
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = false
	resp, err := req.RequestWith(ctx, t.cl)
	if err != nil {
		return [16]byte{}, err
	}
	if len(resp.Topics) != 1 {
		return [16]byte{}, fmt.Errorf("metadata of %s: %d topics in the response", t.rt.offsetsTopic(), len(resp.Topics))
	}
	return resp.Topics[0].TopicID, kerr.ErrorForCode(resp.Topics[0].ErrorCode)
}

// unstorePositions marks every position of the task as not
// stored: the next commit writes them all.
func (t *sourceTask) unstorePositions() {
	t.mu.Lock()
	for _, sp := range t.sps {
		sp.storedSeq = 0
	}
	t.mu.Unlock()
}

// RecoverPositions rebuilds the stored positions of connector (a source's
// name, or name@worker) from the records it wrote to topics (read
// committed; each carries its position in a SourceHeader): per source
// partition, the position of its highest sequence number. It writes them
// to the offsets topic ("" = DefaultOffsetsTopic, created compacted if
// missing) with a scan record at the topics' current ends, so the
// source's next start resumes after its last record written. It refuses
// when the offsets topic already holds a record of connector, and when
// no record of connector is found. It returns the positions written.
// Run it while the source is stopped or failing (ErrPositionsLost).
func RecoverPositions(ctx context.Context, co kafkaclient.Options, offsetsTopic, connector string, topics []string) (int, error) {
	if len(topics) == 0 {
		return 0, errors.New("no topic to recover positions from")
	}
	cl, adm, otopic, err := positionsAdmin(ctx, co, offsetsTopic, connector)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	// A topic that does not exist is named at once (ListEnds would ask
	// again for EndsRetryFor, as for a topic just created).
	td, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return 0, fmt.Errorf("describing %v: %w", topics, err)
	}
	for _, tp := range topics {
		if d := td[tp]; d.Err != nil || len(d.Partitions) == 0 {
			return 0, fmt.Errorf("topic %s to recover positions from: %w", tp, cmp.Or(d.Err, error(kerr.UnknownTopicOrPartition)))
		}
	}
	from := map[string]map[int32]int64{}
	for _, tp := range topics {
		from[tp] = nil
	}
	ends, err := kafkaclient.ListEnds(ctx, adm, true, topics...)
	if err != nil {
		return 0, fmt.Errorf("end offsets of %v: %w", topics, err)
	}
	found := map[string]storedPos{}
	if err := readRange(ctx, co, adm, from, false, true, func(r *kgo.Record) {
		for _, h := range r.Headers {
			if h.Key != SourceHeader {
				continue
			}
			c, sp, seq, pos, err := parseSourceHeader(h.Value)
			if err != nil || c != connector {
				continue
			}
			if cur, ok := found[sp]; !ok || seq > cur.Seq {
				found[sp] = storedPos{Seq: seq, Pos: append([]byte(nil), pos...)}
			}
		}
	}); err != nil {
		return 0, fmt.Errorf("reading %v: %w", topics, err)
	}
	if len(found) == 0 {
		return 0, fmt.Errorf("no record of source %q (header %s) in %v: nothing to recover its positions from", connector, SourceHeader, topics)
	}
	marks := scanMarks{}
	ends.Each(func(o kadm.ListedOffset) {
		if marks[o.Topic] == nil {
			marks[o.Topic] = map[int32]int64{}
		}
		marks[o.Topic][o.Partition] = o.Offset
	})
	var recs []*kgo.Record
	for sp, p := range found {
		v, _ := jsonMarshal(p)
		recs = append(recs, &kgo.Record{Topic: otopic, Key: positionKey(connector, sp), Value: v})
	}
	recs = append(recs, &kgo.Record{Topic: otopic, Key: scanKey(connector), Value: encodeScan(marks)})
	return len(found), producePositions(ctx, cl, otopic, recs)
}

// ResetPositions makes connector's next start begin from scratch on
// purpose (a mysql source: a new snapshot) after its positions were lost:
// it writes an empty scan record, which a source with RequirePositions
// takes as "positions known: none". It refuses when the offsets topic
// holds a record of connector.
func ResetPositions(ctx context.Context, co kafkaclient.Options, offsetsTopic, connector string) error {
	cl, _, otopic, err := positionsAdmin(ctx, co, offsetsTopic, connector)
	if err != nil {
		return err
	}
	defer cl.Close()
	return producePositions(ctx, cl, otopic, []*kgo.Record{{Topic: otopic, Key: scanKey(connector), Value: encodeScan(scanMarks{})}})
}

// positionsAdmin opens a client, makes sure the offsets topic exists
// (compacted) and that it holds no record of connector.
func positionsAdmin(ctx context.Context, co kafkaclient.Options, offsetsTopic, connector string) (*kgo.Client, *kadm.Client, string, error) {
	if offsetsTopic == "" {
		offsetsTopic = DefaultOffsetsTopic
	}
	cl, err := kafkaclient.New(co, kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return nil, nil, "", err
	}
	adm := kadm.NewClient(cl)
	compact := "compact"
	if err := ensureTopic(ctx, adm, offsetsTopic, 1, map[string]*string{"cleanup.policy": &compact}); err != nil {
		cl.Close()
		return nil, nil, "", err
	}
	stored, seen, err := restorePositions(ctx, co, adm, offsetsTopic, connector, true)
	if err != nil {
		cl.Close()
		return nil, nil, "", err
	}
	if seen {
		cl.Close()
		return nil, nil, "", fmt.Errorf("%s already holds positions of %q (%d source partitions): not overwriting them", offsetsTopic, connector, len(stored))
	}
	return cl, adm, offsetsTopic, nil
}

func producePositions(ctx context.Context, cl *kgo.Client, otopic string, recs []*kgo.Record) error {
	for _, r := range recs {
		partition.Set(r, 0)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("writing positions to %s: %w", otopic, err)
	}
	return nil
}

package eostest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"weir/broker/brokertest/kafkatools"
	"weir/broker/brokertest/testbroker"
	"weir/broker/group"
	"weir/internal/kafkapeer"
	"weir/internal/testkit"
	"weir/internal/txntest"
)

// TestKafkaTransactionsTool runs Kafka's kafka-transactions
// (TransactionsCommand) against an open transaction of a franz-go
// producer: list and describe show it Ongoing with its partition,
// describe-producers shows where it started; after the commit, describe
// shows CompleteCommit and the last stable offset is past the marker.
func TestKafkaTransactionsTool(t *testing.T) {
	eachTarget(t, "tools/kafka-transactions", func(t *testing.T) []string { return []string{testbroker.Start(t).Addr} },
		func(t *testing.T, _ string, seeds []string) {
			tool := kafkatools.ForTest(t, kafkatools.TransactionsCommand, seeds[0])
			suffix := strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
			topic, txid := "tool-"+suffix, "tool-tx-"+suffix
			// The transaction stays open while three JVM tools run: on a
			// loaded machine they took longer than franz-go's default
			// 40 s transaction timeout, and the coordinator aborted it.
			cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID(txid), kgo.DefaultProduceTopic(topic),
				kgo.TransactionTimeout(3*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			createTopics(t, cl, 1, topic)
			if err := cl.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				if err := cl.ProduceSync(ctx, kgo.StringRecord("open-"+strconv.Itoa(i))).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			row := findRow(t, "list", tool("list"), "TransactionalId", txid)
			if row["TransactionState"] != "Ongoing" {
				t.Errorf("list: %s is %s, want Ongoing", txid, row["TransactionState"])
			}
			desc := findRow(t, "describe", tool("describe", "--transactional-id", txid), "TransactionalId", txid)
			if desc["TransactionState"] != "Ongoing" || desc["TopicPartitions"] != topic+"-0" {
				t.Errorf("describe: %v, want Ongoing with partition %s-0", desc, topic)
			}
			prod := findRow(t, "describe-producers", tool("describe-producers", "--topic", topic, "--partition", "0"), "ProducerId", desc["ProducerId"])
			if prod["CurrentTransactionStartOffset"] != "0" {
				t.Errorf("describe-producers: %v, want CurrentTransactionStartOffset 0", prod)
			}
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
			testkit.CheckFor(t, 30*time.Second, func() error {
				desc := findRowOf(tool("describe", "--transactional-id", txid), "TransactionalId", txid)
				if desc["TransactionState"] != "CompleteCommit" {
					return fmt.Errorf("describe after the commit: %v, want CompleteCommit", desc)
				}
				return nil
			})
			checkLSO(t, adm, topic, 3, 3)
		})
}

// TestKafkaTransactionsToolHanging makes a hanging transaction, a
// transactional batch appended to a partition that no coordinator knows
// of (possible only with transaction.partition.verification.enable=false,
// KIP-890's defence off, on a broker of its own), which holds the
// partition's last stable offset: kafka-transactions find-hanging finds
// it, abort --start-offset writes its abort marker, and read_committed
// consumers move on without its record.
func TestKafkaTransactionsToolHanging(t *testing.T) {
	noVerify := "transaction.partition.verification.enable=false"
	eachTarget(t, "tools/kafka-transactions-hanging", func(t *testing.T) []string {
		return []string{testbroker.Start(t, testbroker.Config("transaction.partition.verification.enable", "false")).Addr}
	}, func(t *testing.T, target string, seeds []string) {
		if target == "kafka" {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			k, err := kafkapeer.Start(ctx, kafkapeer.Options{Dir: dir, Heap: "384m", Props: []string{noVerify}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(k.Stop)
			seeds = []string{k.Plaintext}
		}
		tool := kafkatools.ForTest(t, kafkatools.TransactionsCommand, seeds[0])
		suffix := strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
		topic := "hang-" + suffix
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		createTopics(t, cl, 1, topic)
		pid, start := hangTransaction(t, seeds, topic, "hanging-tx-"+suffix)
		if err := cl.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
			t.Fatal(err)
		}
		checkLSO(t, adm, topic, start, start+2)

		hang := findRow(t, "find-hanging", tool("find-hanging", "--topic", topic, "--max-transaction-timeout", "0"), "Topic", topic)
		if hang["Partition"] != "0" || hang["ProducerId"] != strconv.FormatInt(pid, 10) || hang["StartOffset"] != strconv.FormatInt(start, 10) {
			t.Errorf("find-hanging: %v, want partition 0, producer %d, start offset %d", hang, pid, start)
		}
		tool("abort", "--topic", topic, "--partition", "0", "--start-offset", strconv.FormatInt(start, 10))
		checkLSO(t, adm, topic, start+3, start+3)
		if rows := table(tool("find-hanging", "--topic", topic, "--max-transaction-timeout", "0")); len(rows) != 0 {
			t.Errorf("find-hanging after the abort: %v, want none", rows)
		}
		if got := values(txntest.ReadCommitted(t, seeds[0], topic)); len(got) != 1 || got[0] != "after" {
			t.Errorf("read_committed after the abort: %v, want [after]", got)
		}
	})
}

// checkLSO waits until partition 0 of topic has last stable offset lso
// and end offset end.
func checkLSO(t *testing.T, adm *kadm.Client, topic string, lso, end int64) {
	t.Helper()
	testkit.CheckFor(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return err
		}
		e, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		gotLSO, _ := c.Lookup(topic, 0)
		gotEnd, _ := e.Lookup(topic, 0)
		if gotLSO.Err != nil || gotEnd.Err != nil {
			return errors.Join(gotLSO.Err, gotEnd.Err)
		}
		if gotLSO.Offset != lso || gotEnd.Offset != end {
			return fmt.Errorf("%s-0: last stable offset %d, end offset %d; want %d, %d", topic, gotLSO.Offset, gotEnd.Offset, lso, end)
		}
		return nil
	})
}

// table parses a kafka-transactions table (a header row and rows of
// tab-separated, space-padded columns).
func table(out string) []map[string]string {
	var header []string
	var rows []map[string]string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "\t")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if len(f) < 2 {
			continue
		}
		if header == nil {
			header = f
			continue
		}
		row := map[string]string{}
		for i, h := range header {
			if i < len(f) && h != "" {
				row[h] = f[i]
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func findRowOf(out, col, val string) map[string]string {
	for _, r := range table(out) {
		if r[col] == val {
			return r
		}
	}
	return nil
}

// findRow is the row of the tool's table whose column col is val.
func findRow(t *testing.T, what, out, col, val string) map[string]string {
	t.Helper()
	r := findRowOf(out, col, val)
	if r == nil {
		t.Fatalf("%s: no row with %s %s in\n%s", what, col, val, out)
	}
	return r
}

// hangTransaction appends a transactional batch of a fresh idempotent
// producer id to partition 0 of topic under txid, without
// AddPartitionsToTxn: the partition's transaction is open and no
// coordinator knows it. It returns the producer id and the batch's
// offset. The broker's transaction.partition.verification.enable must be
// false. The Produce is v11: from v12 on (KIP-890 part 2) a broker adds
// the partition to the transaction itself, verification or not.
func hangTransaction(t *testing.T, seeds []string, topic, txid string) (int64, int64) {
	t.Helper()
	v := kversion.Stable()
	v.SetMaxKeyVersion(0, 11)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.MaxVersions(v))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ipid := kmsg.NewPtrInitProducerIDRequest()
	ipid.ProducerID, ipid.ProducerEpoch, ipid.TransactionTimeoutMillis = -1, -1, 60000
	r, err := ipid.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(r.ErrorCode)
	}
	if err != nil {
		t.Fatal(err)
	}
	batch := group.BuildBatch([]group.Record{{Value: []byte("hanging-0")}}, time.Now().UnixMilli())
	binary.BigEndian.PutUint16(batch[21:], 0x10) // transactional
	binary.BigEndian.PutUint64(batch[43:], uint64(r.ProducerID))
	binary.BigEndian.PutUint16(batch[51:], uint16(r.ProducerEpoch))
	binary.BigEndian.PutUint32(batch[53:], 0) // base sequence
	binary.BigEndian.PutUint32(batch[17:], crc32.Checksum(batch[21:], crc32.MakeTable(crc32.Castagnoli)))
	var topicID [16]byte
	testkit.CheckFor(t, 30*time.Second, func() error {
		td, err := kadm.NewClient(cl).ListTopics(ctx, topic)
		if err == nil {
			err = td.Error()
		}
		topicID = td[topic].ID
		return err
	})
	var offset int64
	testkit.CheckFor(t, 30*time.Second, func() error {
		req := kmsg.NewPtrProduceRequest()
		req.TransactionID, req.Acks, req.TimeoutMillis = kmsg.StringPtr(txid), -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		p := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return fmt.Errorf("transactional produce without AddPartitionsToTxn: %w", err)
		}
		offset = p.BaseOffset
		return nil
	})
	return r.ProducerID, offset
}

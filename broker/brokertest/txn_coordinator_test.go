package brokertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/txncoord"
)

// The transaction coordinator on a 3-broker cluster: the coordinator of a
// transactional id (leader of its __transaction_state partition) writes
// the markers to partition leaders on other brokers (WriteTxnMarkers over
// the inter-broker listener), and when the coordinator is lost the new
// leader of the state partition loads the transaction and finishes it.
func TestTxnCoordinatorAcrossBrokers(t *testing.T) { txnAcrossBrokers(t) }

// The same with every listener SSL: markers and verification go over the
// inter-broker listener's TLS with the broker's client certificate.
func TestTxnCoordinatorAcrossBrokersTLS(t *testing.T) { txnAcrossBrokers(t, TLS()) }

func txnAcrossBrokers(t *testing.T, opts ...Option) {
	if testing.Short() {
		t.Skip("3-broker cluster")
	}
	t.Parallel()
	c := NewCluster(t, append([]Option{Brokers(3), BrokerConfig(map[string]string{"transaction.state.log.num.partitions": "5"})}, opts...)...)
	c.CreateTopic("txo", 3, 3, nil)
	cl := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const id = "tx-across"

	var pid int64
	var epoch int16
	c.WaitFor(30*time.Second, func() error {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = kmsg.StringPtr(id), 60000, -1, -1
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		pid, epoch = resp.ProducerID, resp.ProducerEpoch
		return nil
	})
	st, ok := c.Brokers()[0].Image().Topic(txncoord.StateTopic)
	if !ok || len(st.Partitions) != 5 || len(st.Partitions[0].Replicas) != 3 {
		t.Fatalf("__transaction_state: %+v (want 5 partitions, 3 replicas)", st)
	}
	sp := txncoord.PartitionFor(id, 5)
	coord, err := c.LeaderOf(txncoord.StateTopic, sp)
	if err != nil {
		t.Fatal(err)
	}
	remote := 0
	for p := int32(0); p < 3; p++ {
		if l, err := c.LeaderOf("txo", p); err != nil {
			t.Fatal(err)
		} else if l != coord {
			remote++
		}
	}
	if remote == 0 {
		t.Fatalf("every txo partition is led by the coordinator %d: nothing remote to test", coord)
	}

	addAll := func() {
		t.Helper()
		c.WaitFor(30*time.Second, func() error {
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = "txo", []int32{0, 1, 2}
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						return fmt.Errorf("%s/%d: %w", t.Topic, p.Partition, err)
					}
				}
			}
			return nil
		})
	}
	end := func(commit bool) {
		t.Helper()
		c.WaitFor(30*time.Second, func() error {
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			return kerr.ErrorForCode(resp.ErrorCode)
		})
	}
	state := func(want string) {
		t.Helper()
		c.WaitFor(30*time.Second, func() error {
			req := kmsg.NewPtrDescribeTransactionsRequest()
			req.TransactionalIDs = []string{id}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			if len(resp.TransactionStates) != 1 {
				return fmt.Errorf("%d states", len(resp.TransactionStates))
			}
			s := resp.TransactionStates[0]
			if err := kerr.ErrorForCode(s.ErrorCode); err != nil {
				return err
			}
			if s.State != want {
				return fmt.Errorf("state %s, want %s", s.State, want)
			}
			return nil
		})
	}
	// logEnds are the partitions' end offsets at their current leaders,
	// once every replica has the same (the marker is committed).
	logEnds := func() [3]int64 {
		t.Helper()
		var out [3]int64
		c.WaitFor(30*time.Second, func() error {
			for p := int32(0); p < 3; p++ {
				var end int64 = -1
				for _, b := range c.Brokers() {
					if !b.Running() {
						continue
					}
					l := b.Log("txo", p)
					if l == nil {
						return fmt.Errorf("broker %d has no txo-%d", b.ID, p)
					}
					if end == -1 {
						end = l.EndOffset()
					} else if l.EndOffset() != end {
						return fmt.Errorf("txo-%d: replicas at %d and %d", p, end, l.EndOffset())
					}
				}
				out[p] = end
			}
			return nil
		})
		return out
	}

	before := logEnds()
	addAll()
	end(true)
	state("CompleteCommit")
	after := logEnds()
	for p := range after {
		if after[p] != before[p]+1 {
			t.Errorf("txo-%d: end offset %d -> %d, want one commit marker", p, before[p], after[p])
		}
	}

	// Coordinator failover with a transaction open: the new leader of
	// the state partition serves it, and the abort's markers reach every
	// partition's (possibly new) leader.
	addAll()
	state("Ongoing")
	c.Kill(coord)
	c.WaitFor(30*time.Second, func() error {
		l, err := c.LeaderOf(txncoord.StateTopic, sp)
		if err != nil {
			return err
		}
		if l == coord {
			return fmt.Errorf("the coordinator did not move")
		}
		return nil
	})
	// A new client: this one's connections point at the dead broker.
	cl = c.Client()
	state("Ongoing")
	before = logEnds()
	end(false)
	state("CompleteAbort")
	after = logEnds()
	for p := range after {
		if after[p] != before[p]+1 {
			t.Errorf("after failover txo-%d: end offset %d -> %d, want one abort marker", p, before[p], after[p])
		}
	}
	// The producer keeps its id and epoch with the new coordinator.
	c.WaitFor(30*time.Second, func() error {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = kmsg.StringPtr(id), 60000, pid, epoch
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		if resp.ProducerID != pid || resp.ProducerEpoch != epoch+1 {
			t.Fatalf("after failover: pid %d epoch %d, want %d %d", resp.ProducerID, resp.ProducerEpoch, pid, epoch+1)
		}
		return nil
	})
}

// franz-go's transactional producer on a 3-broker cluster: partitions led
// by other brokers than the coordinator (produce verified with
// AddPartitionsToTxn verifyOnly at the coordinator, markers over the
// inter-broker listener), and the coordinator killed mid-stream. A
// read_committed consumer reads every committed record exactly once and
// no aborted one.
func TestTxnFranzProducerAcrossBrokers(t *testing.T) {
	if testing.Short() {
		t.Skip("3-broker cluster")
	}
	t.Parallel()
	c := NewCluster(t, Brokers(3), BrokerConfig(map[string]string{"transaction.state.log.num.partitions": "5"}))
	c.CreateTopic("txf", 3, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	const id = "tx-franz-across"
	newProducer := func() *kgo.Client {
		return c.Client(kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
			kgo.TransactionTimeout(20*time.Second))
	}
	p := newProducer()
	committed, aborted, unknown := map[string]bool{}, map[string]bool{}, map[string]bool{}
	killed := false
	for i := 0; i < 12; i++ {
		if i == 5 {
			coord, err := c.LeaderOf(txncoord.StateTopic, txncoord.PartitionFor(id, 5))
			if err != nil {
				t.Fatal(err)
			}
			c.Kill(coord)
			killed = true
		}
		commit := i%3 != 2
		vals := []string{fmt.Sprintf("t%d-a", i), fmt.Sprintf("t%d-b", i), fmt.Sprintf("t%d-c", i)}
		err := p.BeginTransaction()
		for _, v := range vals {
			if err == nil {
				err = p.ProduceSync(ctx, &kgo.Record{Topic: "txf", Value: []byte(v)}).FirstErr()
			}
		}
		if err == nil {
			err = p.EndTransaction(ctx, kgo.TransactionEndTry(commit))
		}
		switch {
		case err == nil && commit:
			for _, v := range vals {
				committed[v] = true
			}
		case err == nil:
			for _, v := range vals {
				aborted[v] = true
			}
		default:
			t.Logf("transaction %d: %v (outcome unknown; a new producer continues)", i, err)
			for _, v := range vals {
				unknown[v] = true
			}
			p.Close()
			p = newProducer()
		}
	}
	if !killed || len(committed) < 12 {
		t.Fatalf("only %d records known committed", len(committed))
	}
	cons := c.Client(kgo.ConsumeTopics("txf"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]int{}
	missing := func() int {
		n := 0
		for v := range committed {
			if seen[v] == 0 {
				n++
			}
		}
		return n
	}
	for missing() > 0 {
		fs := cons.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			t.Fatalf("%d committed records never read (read %v)", missing(), seen)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	}
	for v, n := range seen {
		switch {
		case n > 1:
			t.Errorf("%s read %d times", v, n)
		case aborted[v]:
			t.Errorf("aborted record %s read", v)
		case !committed[v] && !unknown[v]:
			t.Errorf("unexpected record %s", v)
		}
	}
}

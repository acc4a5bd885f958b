package txncoord

import (
	"regexp"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Describe answers DescribeTransactions for one transactional id (every
// partition of the transaction; the server drops the topics the client
// may not describe).
func (m *Machine) Describe(id string) kmsg.DescribeTransactionsResponseTransactionState {
	st := kmsg.NewDescribeTransactionsResponseTransactionState()
	st.TransactionalID = id
	st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
	if e := m.CoordinatorError(id); e != nil {
		st.ErrorCode = e.Code
		return st
	}
	t := m.txns[id]
	if t == nil || t.state == Dead {
		st.ErrorCode = kerr.TransactionalIDNotFound.Code
		return st
	}
	st.State = t.state.String()
	st.TimeoutMillis = t.timeoutMs
	st.StartTimestamp = t.start
	st.ProducerID, st.ProducerEpoch = t.producerID, t.epoch
	for i := 0; i < len(t.parts); {
		dt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
		dt.Topic = t.parts[i].Topic
		for ; i < len(t.parts) && t.parts[i].Topic == dt.Topic; i++ {
			dt.Partitions = append(dt.Partitions, t.parts[i].Partition)
		}
		st.Topics = append(st.Topics, dt)
	}
	return st
}

// ListFilter is ListTransactions' filters: states (Kafka names; empty:
// all), producer ids (empty: all), a duration a transaction must have
// been running longer than (negative: no filter) and a regular expression on the
// transactional id (nil: all).
type ListFilter struct {
	States      []string
	ProducerIDs []int64
	MinDuration time.Duration
	Pattern     *regexp.Regexp
}

// List answers ListTransactions: the matching transactions, the state
// filters that name no state, or COORDINATOR_LOAD_IN_PROGRESS while a
// partition loads (as Kafka). Order: by transactional id.
func (m *Machine) List(now time.Time, f ListFilter) ([]kmsg.ListTransactionsResponseTransactionState, []string, *kerr.Error) {
	if len(m.loading) > 0 {
		return nil, nil, kerr.CoordinatorLoadInProgress
	}
	states := map[State]bool{}
	var unknown []string
	for _, s := range f.States {
		if st, ok := ParseState(s); ok {
			states[st] = true
		} else {
			unknown = append(unknown, s)
		}
	}
	if len(f.States) > 0 && len(states) == 0 {
		return []kmsg.ListTransactionsResponseTransactionState{}, unknown, nil
	}
	pids := map[int64]bool{}
	for _, p := range f.ProducerIDs {
		pids[p] = true
	}
	out := []kmsg.ListTransactionsResponseTransactionState{}
	for _, id := range m.sortedIDs() {
		t := m.txns[id]
		switch {
		case len(states) > 0 && !states[t.state]:
		case len(pids) > 0 && !pids[t.producerID]:
		case t.state == Dead:
		case f.MinDuration >= 0 && now.UnixMilli()-t.start <= f.MinDuration.Milliseconds():
		case f.Pattern != nil && !f.Pattern.MatchString(id):
		default:
			ts := kmsg.NewListTransactionsResponseTransactionState()
			ts.TransactionalID, ts.ProducerID, ts.TransactionState = id, t.producerID, t.state.String()
			out = append(out, ts)
		}
	}
	return out, unknown, nil
}

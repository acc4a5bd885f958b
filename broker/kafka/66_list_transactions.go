package kafka

// ListTransactions (key 66), versions 0-2.
//
// The transactions this broker coordinates (broker/txncoord), filtered by
// state names (unknown names are returned in UnknownStateFilters), by
// producer ids, from v1 by how long they have been running
// (DurationFilterMillis: longer than it), and from v2 by a regular
// expression on the transactional id (INVALID_REGULAR_EXPRESSION when it
// does not compile; Go's RE2 syntax, which is Java's for common
// patterns). Only ids the client may DESCRIBE are listed. While a state
// partition loads the answer is COORDINATOR_LOAD_IN_PROGRESS, as in
// Kafka; before __transaction_state exists the list is empty.

import (
	"regexp"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/txncoord"
)

func init() { register(kmsg.ListTransactions.Int16(), 0, 2, handleListTransactions) }

func handleListTransactions(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	resp.TransactionStates = []kmsg.ListTransactionsResponseTransactionState{}
	f := txncoord.ListFilter{States: req.StateFilters, ProducerIDs: req.ProducerIDFilters, MinDuration: -1}
	if req.Version >= 1 && req.DurationFilterMillis >= 0 {
		f.MinDuration = time.Duration(req.DurationFilterMillis) * time.Millisecond
	}
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile(*req.TransactionalIDPattern)
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
		f.Pattern = re
	}
	coord, err := s.txns()
	if err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	var (
		list    []kmsg.ListTransactionsResponseTransactionState
		unknown []string
		le      *kerr.Error
	)
	if coord.Describe(func(m *txncoord.Machine, now time.Time) { list, unknown, le = m.List(now, f) }) != nil {
		resp.UnknownStateFilters = unknownStates(req.StateFilters)
		return resp, nil // no state topic yet: no transactions
	}
	if le != nil {
		resp.ErrorCode = le.Code
		return resp, nil
	}
	resp.UnknownStateFilters = unknown
	for _, t := range list {
		if s.allowed(r, acl.OpDescribe, acl.ResourceTransactionalID, t.TransactionalID) {
			resp.TransactionStates = append(resp.TransactionStates, t)
		}
	}
	return resp, nil
}

func unknownStates(names []string) []string {
	var out []string
	for _, n := range names {
		if _, ok := txncoord.ParseState(n); !ok {
			out = append(out, n)
		}
	}
	return out
}

package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"weir/broker/log"
)

// appendIdempotent appends batches that carry a producer id, under the
// partition's idempotence lock: the producer state (broker/txn) checks the
// sequence, a duplicate is answered with the original offsets (dup=true,
// nothing appended), an in-order batch is appended and recorded.
//
// HOOK(txn): broker/txn's per-partition producer state has not landed yet;
// until it does this appends without sequence checks.
func (s *Server) appendIdempotent(p *partition, records []byte, nbatches int, first *batchView) (info log.AppendInfo, dup bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	info, err = p.log.Append(records, p.leaderEpoch.Load())
	return info, false, err
}

// idempotenceCode maps an idempotence error from broker/txn to its Kafka
// error.
func idempotenceCode(err error) (*kerr.Error, bool) {
	return nil, false
}

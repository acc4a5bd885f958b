package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"weir/broker/log"
	"weir/broker/txn"
)

// appendIdempotent appends batches that carry a producer id through the
// partition's producer state (broker/txn): it checks the sequences under
// the state's lock, answers a duplicate with the original offsets
// (dup=true, nothing appended), and records an appended batch.
func (s *Server) appendIdempotent(p *partition, records []byte) (info log.AppendInfo, dup bool, err error) {
	if p.prod == nil {
		return log.AppendInfo{}, false, perr(kerr.KafkaStorageError, "partition %d has no producer state", p.index)
	}
	res, err := p.prod.Append(records, func() (log.AppendInfo, error) {
		return p.log.Append(records, p.leaderEpoch.Load())
	})
	return res.Info, res.Duplicate, err
}

// idempotenceCode maps an idempotence error from broker/txn to its Kafka
// error.
func idempotenceCode(err error) (*kerr.Error, bool) {
	code, ok := txn.KafkaCode(err)
	if !ok {
		return nil, false
	}
	return kerr.ErrorForCode(code).(*kerr.Error), true
}

// openProducerState loads a partition's producer state; nil on failure
// (idempotent produces then get KAFKA_STORAGE_ERROR).
func (s *Server) openProducerState(topic string, p *partition) {
	ps, err := txn.OpenPartition(s.fs, p.log, txn.Options{
		Expiration: s.cfg.BrokerConfig.ProducerIDExpiration(),
		Logger:     s.log,
		Now:        s.now,
	})
	if err != nil {
		s.log.Error("loading producer state failed", zap.String("topic", topic), zap.Int32("partition", p.index), zap.Error(err))
		return
	}
	p.prod = ps
}

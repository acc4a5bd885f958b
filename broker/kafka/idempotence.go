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
// origin says who appends (a client's Produce, or a coordinator: offset
// commits of a transaction and transaction markers, which carry no
// sequence numbers). tv, for a client's verified transactional produce,
// makes the append check its verification (txn.Partition.AppendVerified).
func (s *Server) appendIdempotent(p *partition, records []byte, epoch int32, origin txn.Origin, tv *txnVerification) (txn.Result, error) {
	prod := p.producers()
	if prod == nil {
		return txn.Result{}, perr(kerr.KafkaStorageError, "partition %d has no producer state", p.index)
	}
	appendFn := func() (log.AppendInfo, error) { return p.log.Append(records, epoch) }
	if tv != nil {
		return prod.AppendVerified(records, tv.guard, appendFn)
	}
	return prod.Append(records, origin, appendFn)
}

// lastStableOffset is the partition's last stable offset: the high
// watermark, held back to the first offset of the earliest transaction
// that is ongoing or whose marker is not committed yet. Without producer
// state (a new leader still loading it, or a follower) the log's last
// known first unstable offset (the previous leader's LSO as this broker
// fetched it) holds it back instead.
func (p *partition) lastStableOffset() int64 {
	hw := p.log.HighWatermark()
	if prod := p.producers(); prod != nil {
		return prod.LastStableOffset(hw)
	}
	if f := p.log.FirstUnstableOffset(); f >= 0 && f < hw {
		return f
	}
	return hw
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

// openProducerState loads a partition's producer state when it has none
// (a leader's); it stays nil on failure (idempotent produces then get
// KAFKA_STORAGE_ERROR).
func (s *Server) openProducerState(topic string, p *partition) {
	p.prodMu.Lock()
	defer p.prodMu.Unlock()
	if p.prod != nil {
		return
	}
	ps, err := txn.OpenPartition(s.fs, p.log, s.producerOptions())
	if err != nil {
		s.log.Error("loading producer state failed", zap.String("topic", topic), zap.Int32("partition", p.index), zap.Error(err))
		return
	}
	p.prod = ps
}

// lastStableOffsetKnown is lastStableOffset, and whether the producer
// state backs it: known is false when the leader has none yet (still
// loading it right after taking over, or loading failed), so the open
// transactions are not known and read_committed must not read yet.
func (p *partition) lastStableOffsetKnown() (lso int64, known bool) {
	if p.producers() == nil {
		return p.lastStableOffset(), false
	}
	return p.lastStableOffset(), true
}

func (s *Server) producerOptions() txn.Options {
	return txn.Options{
		Expiration: s.cfg.BrokerConfig.ProducerIDExpiration(),
		// producer.id.expiration.ms is a dynamic broker config.
		ExpirationFunc: s.cfg.BrokerConfig.ProducerIDExpiration,
		Logger:         s.log,
		Now:            s.now,
	}
}

package kafka

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"weir/broker/log"
	"weir/broker/log/vfs"
)

// An I/O error reading a partition's log answers the Fetch with
// KAFKA_STORAGE_ERROR for that partition and hands the error to Config.OnStorageError (the broker's log
// directory monitor, broker/logdir). EIO comes from the fault-injecting
// FS: no real file system in a test produces it.
func TestReadEIOIsStorageError(t *testing.T) {
	t.Parallel()
	var failReads atomic.Bool
	ffs := vfs.NewFault(vfs.OS)
	ffs.SetInjector(func(op vfs.Op) *vfs.Fault {
		if op.Kind == vfs.OpRead && failReads.Load() && strings.HasSuffix(op.Name, ".log") {
			return &vfs.Fault{Err: syscall.EIO}
		}
		return nil
	})
	logs, err := log.NewManager(ffs, t.TempDir(), log.ManagerOptions{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	var (
		mu       sync.Mutex
		reported []error
	)
	b := startBroker(t, func(c *Config) {
		c.Logs = logs
		c.OnStorageError = func(_ string, _ int32, err error) {
			mu.Lock()
			reported = append(reported, err)
			mu.Unlock()
		}
	})
	createTopic(t, b, "eio", 1, nil)
	prod := b.client(kgo.DefaultProduceTopic("eio"))
	if err := prod.ProduceSync(context.Background(), &kgo.Record{Value: []byte("v0")}, &kgo.Record{Value: []byte("v1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, b.addr)
	if p := rc.roundTrip(fetchReq(12, "eio", 0, 0)).(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Fatalf("fetch before the fault: %v, %d bytes", kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
	}
	failReads.Store(true)
	if p := rc.roundTrip(fetchReq(12, "eio", 1, 0)).(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.KafkaStorageError.Code {
		t.Fatalf("fetch with EIO: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(p.ErrorCode))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) == 0 || !errors.Is(reported[0], syscall.EIO) {
		t.Fatalf("OnStorageError got %v, want the EIO", reported)
	}
}

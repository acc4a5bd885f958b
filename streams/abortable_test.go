package streams

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A write the broker refused with TRANSACTION_ABORTABLE or
// INVALID_TXN_STATE dooms only the exactly-once transaction (the app
// aborts it and goes on); any other refusal, or an error that is not a
// refused write, stops the app. The refusal keeps the broker's error.
func TestAbortableProduce(t *testing.T) {
	for _, tc := range []struct {
		err       error
		abortable bool
	}{
		{kerr.InvalidTxnState, true},
		{kerr.TransactionAbortable, true},
		{fmt.Errorf("wrapped: %w", kerr.TransactionAbortable), true},
		{kerr.MessageTooLarge, false},
		{kerr.InvalidProducerEpoch, false},
		{kerr.ProducerFenced, false},
		{kerr.TopicAuthorizationFailed, false},
	} {
		a := &App{}
		a.promiseFn(&kgo.Record{Topic: "x-changelog", Partition: 2}, tc.err)
		err := a.produceErr()
		if !errors.Is(err, ErrProduce) || !errors.Is(err, tc.err) {
			t.Fatalf("%v: produce error %v does not wrap ErrProduce and the broker's error", tc.err, err)
		}
		if got := abortableProduce(err); got != tc.abortable {
			t.Errorf("%v: abortableProduce = %v, want %v", tc.err, got, tc.abortable)
		}
	}
	// The same broker error outside a refused write (say, from EndTxn)
	// is not this case.
	if abortableProduce(kerr.InvalidTxnState) {
		t.Error("abortableProduce(INVALID_TXN_STATE without ErrProduce) = true")
	}
}

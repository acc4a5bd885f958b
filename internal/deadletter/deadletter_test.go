package deadletter

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestRecordLayout(t *testing.T) {
	ts := time.UnixMilli(1700000000123)
	in := &kgo.Record{Topic: "logs", Partition: 2, Offset: 41, Key: []byte("k"), Value: []byte("v"),
		Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("x")}}, Timestamp: ts}
	dl := Record(Topic("es"), "es", in.Key, in.Value, in.Headers, in.Timestamp, errors.New("mapping conflict"), Consumed(in)...)
	if dl.Topic != "weir-dlq-es" || string(dl.Key) != "k" || string(dl.Value) != "v" || !dl.Timestamp.Equal(ts) {
		t.Fatalf("record: %+v", dl)
	}
	want := [][2]string{{"trace", "x"}, {HeaderConnector, "es"}, {HeaderMessage, "mapping conflict"},
		{HeaderClass, "*errors.errorString"}, {HeaderTopic, "logs"}, {HeaderPartition, "2"}, {HeaderOffset, "41"}}
	if len(dl.Headers) != len(want) {
		t.Fatalf("headers: %v", dl.Headers)
	}
	for i, w := range want {
		if h := dl.Headers[i]; h.Key != w[0] || string(h.Value) != w[1] {
			t.Errorf("header %d: %s=%q, want %s=%q", i, h.Key, h.Value, w[0], w[1])
		}
	}
	// The record's own header slice is not written through.
	if len(in.Headers) != 1 {
		t.Errorf("input headers changed: %v", in.Headers)
	}
}

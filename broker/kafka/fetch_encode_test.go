package kafka

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// byteSource is a recordSource over memory.
type byteSource struct {
	b        []byte
	released *int
}

func (s byteSource) Len() int64 { return int64(len(s.b)) }
func (s byteSource) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(s.b)
	return int64(n), err
}
func (s byteSource) ReadAt(p []byte, off int64) (int, error) { return copy(p, s.b[off:]), nil }
func (s byteSource) Release()                                { *s.released++ }

// bufConn is a net.Conn writing into a buffer.
type bufConn struct {
	net.Conn
	buf *bytes.Buffer
}

func (c bufConn) Write(p []byte) (int, error) { return c.buf.Write(p) }

func TestFetchEncodingMatchesKmsg(t *testing.T) {
	t.Parallel()
	small := bytes.Repeat([]byte{0xab}, 100)
	large := bytes.Repeat([]byte{0xcd}, copyBelow+5000) // goes through WriteTo
	for v := int16(4); v <= 12; v++ {
		released := 0
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = v
		resp.ThrottleMillis = 7
		resp.SessionID = 0
		srcs := [][]recordSource{}
		for ti, name := range []string{"t1", "a-much-longer-topic-name"} {
			ft := kmsg.NewFetchResponseTopic()
			ft.Topic = name
			var ps []recordSource
			for pi, data := range [][]byte{small, nil, large, {}} {
				fp := kmsg.NewFetchResponseTopicPartition()
				fp.Partition = int32(pi)
				fp.HighWatermark = int64(1000 * (ti + 1))
				fp.LastStableOffset = fp.HighWatermark
				fp.LogStartOffset = int64(pi)
				if pi == 1 {
					fp.ErrorCode = 1
				}
				if pi == 3 && v >= 4 {
					fp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 9, FirstOffset: 3}}
				}
				fp.PreferredReadReplica = -1
				ft.Partitions = append(ft.Partitions, fp)
				if data != nil {
					ps = append(ps, byteSource{b: data, released: &released})
				} else {
					ps = append(ps, nil)
				}
			}
			resp.Topics = append(resp.Topics, ft)
			srcs = append(srcs, ps)
		}
		h := &header{key: 1, version: v, correlationID: 42, flexible: v >= 12}

		// What kmsg encodes with the bytes inline.
		want := kmsg.NewPtrFetchResponse()
		*want = *resp
		want.Topics = nil
		for i, ft := range resp.Topics {
			c := ft
			c.Partitions = append([]kmsg.FetchResponseTopicPartition(nil), ft.Partitions...)
			for j := range c.Partitions {
				if s := srcs[i][j]; s != nil {
					c.Partitions[j].RecordBatches = s.(byteSource).b
				} else {
					c.Partitions[j].RecordBatches = []byte{}
				}
			}
			want.Topics = append(want.Topics, c)
		}
		wantFrame := encodeFrame(h, want)

		var out bytes.Buffer
		w := &connWriter{bw: bufio.NewWriterSize(bufConn{buf: &out}, 4096), raw: bufConn{buf: &out}}
		reply := &fetchReply{FetchResponse: resp, srcs: srcs}
		if err := reply.writeFrame(w, appendResponseHeader(nil, h)); err != nil {
			t.Fatal(err)
		}
		if err := w.bw.Flush(); err != nil {
			t.Fatal(err)
		}
		reply.release()
		if !bytes.Equal(out.Bytes(), wantFrame) {
			t.Fatalf("v%d: spliced encoding differs from kmsg (%d vs %d bytes)", v, out.Len(), len(wantFrame))
		}
		if released != 6 {
			t.Fatalf("v%d: %d sources released, want 6", v, released)
		}
		// And kmsg decodes it.
		got := kmsg.NewPtrFetchResponse()
		got.Version = v
		body := out.Bytes()[8:]
		if v >= 12 {
			body = body[1:]
		}
		if err := got.ReadFrom(body); err != nil {
			t.Fatalf("v%d: kmsg cannot decode: %v", v, err)
		}
	}
}

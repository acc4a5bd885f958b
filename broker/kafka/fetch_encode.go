package kafka

import (
	"encoding/binary"
	"io"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A Fetch response is encoded by hand around the record bytes so that those
// come straight from the log files (sendfile) instead of being copied into
// the encoded response. The layout is kmsg's FetchResponse for v4-v12,
// restricted to what weir sends: no tagged fields (DivergingEpoch,
// CurrentLeader, SnapshotID at their -1 defaults, no Brokers). The test
// TestFetchEncodingMatchesKmsg checks byte equality with kmsg for every
// version served.

// recordSource is a range of record-batch bytes; *log.Section is one.
type recordSource interface {
	Len() int64
	WriteTo(w io.Writer) (int64, error)
	ReadAt(p []byte, off int64) (int, error)
	Release()
}

// copyBelow: sources smaller than this are copied into the write buffer;
// larger ones go to the socket with sendfile after a flush. A sendfile call
// costs more than copying a few KiB.
const copyBelow = 32 << 10

// fetchReply is a Fetch response whose partitions' RecordBatches are given
// by srcs (parallel to Topics[i].Partitions[j]; nil = no records). The
// embedded response's RecordBatches fields are ignored.
type fetchReply struct {
	*kmsg.FetchResponse
	srcs [][]recordSource
}

// splice is a point in the encoded bytes where a source's bytes go.
type splice struct {
	at  int
	src recordSource
}

// encode appends the response body to dst (which holds the size prefix and
// header) and returns it with the splice points and their total length.
func (f *fetchReply) encode(dst []byte) ([]byte, []splice, int64) {
	v := f.FetchResponse
	version := v.Version
	flex := version >= 12
	var spl []splice
	var total int64

	appendArrayLen := func(dst []byte, n int) []byte {
		if flex {
			return kbin.AppendUvarint(dst, uint32(n+1))
		}
		return kbin.AppendInt32(dst, int32(n))
	}
	if version >= 1 {
		dst = kbin.AppendInt32(dst, v.ThrottleMillis)
	}
	if version >= 7 {
		dst = kbin.AppendInt16(dst, v.ErrorCode)
		dst = kbin.AppendInt32(dst, v.SessionID)
	}
	dst = appendArrayLen(dst, len(v.Topics))
	for i := range v.Topics {
		t := &v.Topics[i]
		if flex {
			dst = kbin.AppendCompactString(dst, t.Topic)
		} else {
			dst = kbin.AppendString(dst, t.Topic)
		}
		dst = appendArrayLen(dst, len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			dst = kbin.AppendInt32(dst, p.Partition)
			dst = kbin.AppendInt16(dst, p.ErrorCode)
			dst = kbin.AppendInt64(dst, p.HighWatermark)
			if version >= 4 {
				dst = kbin.AppendInt64(dst, p.LastStableOffset)
			}
			if version >= 5 {
				dst = kbin.AppendInt64(dst, p.LogStartOffset)
			}
			if version >= 4 {
				if p.AbortedTransactions == nil {
					if flex {
						dst = append(dst, 0)
					} else {
						dst = kbin.AppendInt32(dst, -1)
					}
				} else {
					dst = appendArrayLen(dst, len(p.AbortedTransactions))
					for _, a := range p.AbortedTransactions {
						dst = kbin.AppendInt64(dst, a.ProducerID)
						dst = kbin.AppendInt64(dst, a.FirstOffset)
						if flex {
							dst = append(dst, 0)
						}
					}
				}
			}
			if version >= 11 {
				dst = kbin.AppendInt32(dst, p.PreferredReadReplica)
			}
			var src recordSource
			if i < len(f.srcs) && j < len(f.srcs[i]) {
				src = f.srcs[i][j]
			}
			var n int64
			if src != nil {
				n = src.Len()
			}
			if flex {
				dst = kbin.AppendUvarint(dst, uint32(n+1))
			} else {
				dst = kbin.AppendInt32(dst, int32(n))
			}
			if n > 0 {
				spl = append(spl, splice{at: len(dst), src: src})
				total += n
			}
			if flex {
				dst = append(dst, 0) // partition tags
			}
		}
		if flex {
			dst = append(dst, 0) // topic tags
		}
	}
	if flex {
		dst = append(dst, 0) // response tags
	}
	return dst, spl, total
}

// writeFrame implements splicer.
func (f *fetchReply) writeFrame(w *connWriter, hdr []byte) error {
	buf := make([]byte, 4, 64+len(hdr)+64*len(f.Topics))
	buf = append(buf, hdr...)
	buf, spl, total := f.encode(buf)
	binary.BigEndian.PutUint32(buf, uint32(int64(len(buf)-4)+total))
	prev := 0
	for _, sp := range spl {
		if _, err := w.bw.Write(buf[prev:sp.at]); err != nil {
			return err
		}
		if err := w.writeSource(sp.src); err != nil {
			return err
		}
		prev = sp.at
	}
	_, err := w.bw.Write(buf[prev:])
	return err
}

// writeSource writes src's bytes: small ones through the buffer, large ones
// with the source's WriteTo on the raw socket (sendfile for log sections).
func (w *connWriter) writeSource(src recordSource) error {
	n := src.Len()
	if n < copyBelow {
		if int64(w.bw.Available()) < n {
			if err := w.bw.Flush(); err != nil {
				return err
			}
		}
		b := w.bw.AvailableBuffer()[:n]
		if m, err := src.ReadAt(b, 0); err != nil && !(err == io.EOF && int64(m) == n) {
			return err
		}
		_, err := w.bw.Write(b)
		return err
	}
	if err := w.bw.Flush(); err != nil {
		return err
	}
	m, err := src.WriteTo(w.raw)
	if err == nil && m != n {
		err = io.ErrShortWrite
	}
	return err
}

// release implements splicer.
func (f *fetchReply) release() {
	for _, ps := range f.srcs {
		for _, s := range ps {
			if s != nil {
				s.Release()
			}
		}
	}
	f.srcs = nil
}

package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Codecs (attribute bits 0-2).
const (
	CodecNone   = 0
	CodecGzip   = 1
	CodecSnappy = 2
	CodecLZ4    = 3
	CodecZstd   = 4
)

// maxDecompressed bounds the decompressed size of one batch.
const maxDecompressed = 256 << 20

var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

var (
	zstdOnce sync.Once
	zstdDec  *zstd.Decoder
	zstdEnc  *zstd.Encoder
)

func zstdCodecs() (*zstd.Decoder, *zstd.Encoder) {
	zstdOnce.Do(func() {
		zstdDec, _ = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxDecompressed), zstd.WithDecoderConcurrency(1))
		zstdEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	})
	return zstdDec, zstdEnc
}

func readAllLimited(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxDecompressed+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxDecompressed {
		return nil, fmt.Errorf("decompressed batch larger than %d bytes", maxDecompressed)
	}
	return b, nil
}

// decompress returns the uncompressed records of a batch.
func decompress(codec int8, src []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return src, nil
	case CodecGzip:
		r, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, err
		}
		return readAllLimited(r)
	case CodecSnappy:
		if bytes.HasPrefix(src, xerialMagic) && len(src) >= 16 {
			var out []byte
			for p := src[16:]; len(p) > 0; {
				if len(p) < 4 {
					return nil, fmt.Errorf("xerial snappy: truncated chunk length")
				}
				n := int(binary.BigEndian.Uint32(p))
				if n < 0 || n > len(p)-4 {
					return nil, fmt.Errorf("xerial snappy: chunk of %d bytes, %d left", n, len(p)-4)
				}
				if dl, err := s2.DecodedLen(p[4 : 4+n]); err != nil || len(out)+dl > maxDecompressed {
					return nil, fmt.Errorf("xerial snappy: bad chunk: %v", err)
				}
				chunk, err := s2.Decode(nil, p[4:4+n])
				if err != nil {
					return nil, err
				}
				out = append(out, chunk...)
				p = p[4+n:]
			}
			return out, nil
		}
		if dl, err := s2.DecodedLen(src); err != nil || dl > maxDecompressed {
			return nil, fmt.Errorf("snappy: bad block: %v", err)
		}
		return s2.Decode(nil, src)
	case CodecLZ4:
		return readAllLimited(lz4.NewReader(bytes.NewReader(src)))
	case CodecZstd:
		d, _ := zstdCodecs()
		return d.DecodeAll(src, nil)
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

// compress compresses records with codec (snappy is written xerial-framed,
// as the Java client does, which every client reads).
func compress(codec int8, src []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return src, nil
	case CodecGzip:
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case CodecSnappy:
		out := append([]byte(nil), xerialMagic...)
		out = binary.BigEndian.AppendUint32(out, 1) // version
		out = binary.BigEndian.AppendUint32(out, 1) // min compatible
		const block = 32 << 10
		for p := src; len(p) > 0; {
			n := min(len(p), block)
			c := s2.EncodeSnappy(nil, p[:n])
			out = binary.BigEndian.AppendUint32(out, uint32(len(c)))
			out = append(out, c...)
			p = p[n:]
		}
		return out, nil
	case CodecLZ4:
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(src); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	case CodecZstd:
		_, e := zstdCodecs()
		return e.EncodeAll(src, nil), nil
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

// rawRecord is one record of a batch: its encoded bytes and parsed fields.
type rawRecord struct {
	raw []byte
	rec kmsg.Record
}

// batchRecords decodes (decompressing if needed) the records of a whole
// batch. The records alias the decompressed buffer.
func batchRecords(batch []byte, h BatchHeader) ([]rawRecord, error) {
	if int64(len(batch)) < h.Size() {
		return nil, fmt.Errorf("%w: short batch", ErrCorruptBatch)
	}
	recs, err := decompress(h.Codec(), batch[BatchHeaderSize:h.Size()])
	if err != nil {
		return nil, fmt.Errorf("%w: batch at offset %d: decompress: %w", ErrCorruptBatch, h.BaseOffset, err)
	}
	if int(h.NumRecords) > len(recs) {
		return nil, fmt.Errorf("%w: batch at offset %d claims %d records in %d bytes", ErrCorruptBatch, h.BaseOffset, h.NumRecords, len(recs))
	}
	out := make([]rawRecord, 0, h.NumRecords)
	for i := int32(0); i < h.NumRecords; i++ {
		l, n := binary.Varint(recs)
		if n <= 0 || l < 0 || l > int64(len(recs)-n) {
			return nil, fmt.Errorf("%w: batch at offset %d: record %d has a bad length", ErrCorruptBatch, h.BaseOffset, i)
		}
		raw := recs[:n+int(l)]
		var r rawRecord
		r.raw = raw
		if err := r.rec.UnsafeReadFrom(raw); err != nil {
			return nil, fmt.Errorf("%w: batch at offset %d: record %d: %w", ErrCorruptBatch, h.BaseOffset, i, err)
		}
		out = append(out, r)
		recs = recs[n+int(l):]
	}
	return out, nil
}

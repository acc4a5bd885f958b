package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/kafkaclient"
	"weir/internal/kafkaclient/partition"
)

type produceFlags struct {
	key          string
	keySep       string
	partition    int32
	headers      string
	acks         string
	compression  string
	linger       time.Duration
	maxLineBytes int
}

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		f := &produceFlags{}
		cmd := &cobra.Command{
			Use:   "produce TOPIC",
			Short: "Produce the lines of stdin as records, one record per line",
			Long: `Read stdin and produce one record per line (the trailing newline is not
part of the value) to TOPIC, then flush and exit at end of input.

Records without --partition go where Kafka's Java producer would put them:
murmur2(key) mod partitions for keyed records, sticky batches otherwise.
The exit status is non-zero if any record failed; each failure is reported
with its input line number.`,
			Example: `  echo hello | weir produce logs
  weir produce logs --key-separator : < keyed.txt      # "key:value" lines
  weir produce logs --key host1 --headers source=app,env=prod --acks 1 --compression zstd < app.log
  weir produce users --value-schema user.avsc < users.jsonl   # Avro JSON lines → Avro`,
			Args: cobra.ExactArgs(1),
		}
		cf := addClientFlags(cmd, g)
		af := addAvroProduceFlags(cmd)
		fl := cmd.Flags()
		fl.StringVar(&f.key, "key", "", "fixed key for every record (default: no key)")
		fl.StringVar(&f.keySep, "key-separator", "", "split each line at the first occurrence into key and value")
		fl.Int32Var(&f.partition, "partition", -1, "produce every record to this partition (-1: partition by key, else sticky)")
		fl.StringVar(&f.headers, "headers", "", "headers for every record: k=v[,k=v...]")
		fl.StringVar(&f.acks, "acks", "all", "acknowledgements: 0, 1, all (-1)")
		fl.StringVar(&f.compression, "compression", "none", "batch compression: none, gzip, snappy, lz4, zstd")
		fl.DurationVar(&f.linger, "linger", 5*time.Millisecond, "how long a batch waits for more records before it is sent")
		fl.IntVar(&f.maxLineBytes, "max-line-bytes", 16<<20, "longest accepted input line")
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			return runProduce(cmd, cf, f, af, args[0])
		}
		return cmd
	})
}

// parseHeaders parses "k=v,k2=v2".
func parseHeaders(s string) ([]kgo.RecordHeader, error) {
	var hs []kgo.RecordHeader
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--headers %q: %q is not k=v (want k=v[,k=v...])", s, kv)
		}
		hs = append(hs, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	return hs, nil
}

// lineError is a failed record and its input line.
type lineError struct {
	line int
	err  error
}

// produceErrors collects failures from promise callbacks.
type produceErrors struct {
	mu    sync.Mutex
	n     int
	first []lineError // the earliest lines, at most keep
}

const keepErrors = 10

func (p *produceErrors) add(line int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	p.first = append(p.first, lineError{line, err})
	sort.Slice(p.first, func(i, j int) bool { return p.first[i].line < p.first[j].line })
	if len(p.first) > keepErrors {
		p.first = p.first[:keepErrors]
	}
}

func runProduce(cmd *cobra.Command, cf *clientFlags, f *produceFlags, af *avroFlags, topic string) error {
	acks, err := kafkaclient.ParseAcks(f.acks)
	if err != nil {
		return err
	}
	codec, err := kafkaclient.ParseCompression(f.compression)
	if err != nil {
		return err
	}
	headers, err := parseHeaders(f.headers)
	if err != nil {
		return err
	}
	if cmd.Flags().Changed("key") && f.keySep != "" {
		return errors.New("--key and --key-separator exclude each other: pick one")
	}
	if f.partition < -1 {
		return fmt.Errorf("--partition %d: want a partition number >= 0, or -1", f.partition)
	}
	co, err := cf.options()
	if err != nil {
		return err
	}
	opts := append(kafkaclient.Producer(acks, codec),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(f.linger),
		kgo.RecordDeliveryTimeout(cf.timeout),
	)
	cl, err := kafkaclient.New(co, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	ctx, stop := signalContext(cmd)
	defer stop()
	encodeValue, err := af.valueEncoder(ctx, topic) // nil without --value-schema
	if err != nil {
		return err
	}

	var (
		perrs produceErrors
		key   []byte
	)
	if cmd.Flags().Changed("key") {
		key = []byte(f.key)
	}
	sep := []byte(f.keySep)

	lines := make(chan lineOrErr, 256)
	go readLines(cmd.InOrStdin(), f.maxLineBytes, lines)

	n := 0
	var readErr error
loop:
	for {
		var l lineOrErr
		var ok bool
		select {
		case <-ctx.Done():
			break loop
		case l, ok = <-lines:
		}
		if !ok {
			break
		}
		if l.err != nil {
			readErr = l.err
			break
		}
		n++
		r := &kgo.Record{Value: l.b, Key: key, Headers: headers}
		if len(sep) > 0 {
			k, v, found := bytes.Cut(l.b, sep)
			if !found {
				perrs.add(l.n, fmt.Errorf("no key separator %q in the line", f.keySep))
				continue
			}
			r.Key, r.Value = k, v
		}
		if encodeValue != nil {
			v, err := encodeValue(r.Value)
			if err != nil {
				perrs.add(l.n, err)
				continue
			}
			r.Value = v
		}
		if f.partition >= 0 {
			partition.Set(r, f.partition)
		}
		line := l.n
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				perrs.add(line, fmt.Errorf("topic %q partition %d: %w", topic, r.Partition, err))
			}
		})
	}
	// Flush what was read, even after SIGINT, within --timeout.
	fctx, cancel := context.WithTimeout(context.Background(), cf.timeout)
	defer cancel()
	if err := cl.Flush(fctx); err != nil {
		return cf.explain(fmt.Errorf("flushing records to topic %q: %w", topic, err))
	}
	if readErr != nil {
		return fmt.Errorf("reading stdin: %w", readErr)
	}
	if perrs.n > 0 {
		w := cmd.ErrOrStderr()
		for _, e := range perrs.first {
			fmt.Fprintf(w, "line %d: %v\n", e.line, cf.explain(e.err))
		}
		first := perrs.first[0]
		return fmt.Errorf("%d of %d records failed; first at line %d: %w", perrs.n, n, first.line, cf.explain(first.err))
	}
	return nil
}

type lineOrErr struct {
	b   []byte
	n   int // 1-based line number
	err error
}

// readLines sends each line of r (without its "\n") to out, then closes
// out. A final line without "\n" counts; an empty input sends nothing.
func readLines(r io.Reader, max int, out chan<- lineOrErr) {
	defer close(out)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), max)
	sc.Split(splitLF)
	n := 0
	for sc.Scan() {
		n++
		out <- lineOrErr{b: bytes.Clone(sc.Bytes()), n: n}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("line %d is longer than --max-line-bytes %d: %w", n+1, max, err)
		}
		out <- lineOrErr{err: err, n: n + 1}
	}
}

// splitLF splits at "\n" only, keeping any "\r" (records round-trip
// byte for byte, as with kcat -P).
func splitLF(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

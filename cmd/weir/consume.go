package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"weir/internal/kafkaclient"
	"weir/internal/kafkaclient/balancer"
)

type consumeFlags struct {
	fromBeginning bool
	offset        string
	partition     int32
	count         int64
	format        string
	exitAtEnd     bool
	group         string
	balancers     []string
}

const consumeFormatHelp = `output format, kcat -f style:
  %t topic  %p partition  %o offset  %k key  %v value  %T timestamp (ms)
  %h headers (k=v,k=v)  %K key length  %S value length (-1 if null)
  %% a literal %;  \n \t \r \\ escapes`

func init() {
	registerCommand(func(g *globalFlags) *cobra.Command {
		f := &consumeFlags{}
		cmd := &cobra.Command{
			Use:   "consume TOPIC",
			Short: "Print the records of a topic",
			Long: `Read TOPIC (all partitions, or one with --partition) and print each record
with --format, by default its value and a newline. Without --offset or
--from-beginning it starts at the end and waits for new records; it stops
after -n records, at the end with --exit-at-end, or cleanly on Ctrl-C.

Without --group no consumer group is used and offsets are not committed.
With --group G it consumes as a member of group G: partitions are shared
with the group's other members (--balancer picks the assignment strategy),
it starts at the group's committed offsets (--offset only applies where the
group has none), and it commits the offsets of what it printed, periodically
and when it exits. -e with --group stops once this member has read every
partition to its end, so use it when consuming alone.`,
			Example: `  weir consume logs --from-beginning
  weir consume logs --partition 2 --offset 1000 -n 10
  weir consume logs -e --offset earliest --format '%p/%o %k=%v (%T) [%h]\n'
  weir consume logs --group my-app --balancer cooperative-sticky
  weir consume users --decode-avro --from-beginning          # Avro values as JSON`,
			Args: cobra.ExactArgs(1),
		}
		cf := addClientFlags(cmd, g)
		af := addAvroConsumeFlags(cmd)
		fl := cmd.Flags()
		fl.BoolVar(&f.fromBeginning, "from-beginning", false, "start at the earliest offset (same as --offset earliest)")
		fl.StringVar(&f.offset, "offset", "latest", "where to start in each partition: earliest, latest or an offset N")
		fl.Int32Var(&f.partition, "partition", -1, "read only this partition (-1: all)")
		fl.Int64VarP(&f.count, "count", "n", 0, "exit after this many records (0: no limit)")
		fl.StringVar(&f.format, "format", `%v\n`, consumeFormatHelp)
		fl.BoolVarP(&f.exitAtEnd, "exit-at-end", "e", false, "exit once every partition is read up to the end offset it had at start")
		fl.StringVarP(&f.group, "group", "G", "", "consume as a member of this consumer group, committing offsets")
		fl.StringSliceVar(&f.balancers, "balancer", []string{balancer.Default}, "group assignment strategies in order of preference: "+strings.Join(balancer.Names, ", "))
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			return runConsume(cmd, cf, f, af, args[0])
		}
		return cmd
	})
}

func parseStartOffset(f *consumeFlags, changed bool) (kgo.Offset, error) {
	if f.fromBeginning {
		if changed && f.offset != "earliest" {
			return kgo.Offset{}, fmt.Errorf("--from-beginning and --offset %s disagree: pass one", f.offset)
		}
		return kgo.NewOffset().AtStart(), nil
	}
	switch f.offset {
	case "earliest", "beginning":
		return kgo.NewOffset().AtStart(), nil
	case "latest", "end":
		return kgo.NewOffset().AtEnd(), nil
	}
	n, err := strconv.ParseInt(f.offset, 10, 64)
	if err != nil || n < 0 {
		return kgo.Offset{}, fmt.Errorf("--offset %q: want earliest, latest or an offset >= 0", f.offset)
	}
	return kgo.NewOffset().At(n), nil
}

func runConsume(cmd *cobra.Command, cf *clientFlags, f *consumeFlags, af *avroFlags, topic string) error {
	start, err := parseStartOffset(f, cmd.Flags().Changed("offset"))
	if err != nil {
		return err
	}
	format, err := parseRecordFormat(f.format)
	if err != nil {
		return err
	}
	decodeValue, err := af.valueDecoder() // nil without --value-schema / --decode-avro
	if err != nil {
		return err
	}
	if f.count < 0 {
		return fmt.Errorf("-n %d: want a count >= 0", f.count)
	}
	var groupOpts []kgo.Opt
	if f.group != "" {
		if f.partition >= 0 {
			return fmt.Errorf("--partition %d cannot be used with --group %s: the group assigns the partitions", f.partition, f.group)
		}
		if _, err := balancer.Opt(f.balancers...); err != nil {
			return fmt.Errorf("--balancer: %w", err)
		}
		groupOpts = []kgo.Opt{kgo.ConsumerGroup(f.group), kgo.AutoCommitMarks()}
	}
	ctx, stop := signalContext(cmd)
	defer stop()

	// Check the topic and partition exist, and learn the end offsets for -e.
	adm, acl, err := cf.admin()
	if err != nil {
		return err
	}
	defer acl.Close()
	mctx, cancel := cf.requestCtx(ctx)
	tds, err := adm.ListTopicsWithInternal(mctx, topic)
	cancel()
	if err != nil {
		return cf.explain(fmt.Errorf("looking up topic %q: %w", topic, err))
	}
	td := tds[topic]
	if td.Err != nil || len(td.Partitions) == 0 {
		err := td.Err
		if err == nil {
			err = errors.New("no partitions")
		}
		return topicErr(topic, err, "")
	}
	if f.partition >= 0 {
		if _, ok := td.Partitions[f.partition]; !ok {
			return fmt.Errorf("topic %q has no partition %d (it has partitions 0-%d)", topic, f.partition, len(td.Partitions)-1)
		}
	}
	// remaining[p] is the end offset still to reach for --exit-at-end.
	remaining := map[int32]int64{}
	groupCommitted := map[int32]bool{} // partitions where --group resumes at a commit
	if f.exitAtEnd {
		mctx, cancel := cf.requestCtx(ctx)
		ends, err := adm.ListEndOffsets(mctx, topic)
		cancel()
		if err != nil {
			return cf.explain(fmt.Errorf("listing end offsets of topic %q: %w", topic, err))
		}
		var lerr error
		ends.Each(func(o kadm.ListedOffset) {
			if f.partition >= 0 && o.Partition != f.partition {
				return
			}
			if o.Err != nil && lerr == nil {
				lerr = fmt.Errorf("topic %q partition %d end offset: %w", topic, o.Partition, o.Err)
			}
			remaining[o.Partition] = o.Offset
		})
		if lerr != nil {
			return lerr
		}
		if f.group != "" {
			// The group resumes at its commits: partitions committed up
			// to their end have nothing left to read.
			mctx, cancel := cf.requestCtx(ctx)
			commits, err := adm.FetchOffsets(mctx, f.group)
			cancel()
			if err != nil {
				return cf.explain(fmt.Errorf("fetching the committed offsets of group %q: %w", f.group, err))
			}
			for p, end := range remaining {
				if c, ok := commits.Lookup(topic, p); ok && c.Err == nil && c.At >= 0 {
					groupCommitted[p] = true
					if c.At >= end {
						delete(remaining, p)
					}
				}
			}
		}
	}

	co, err := cf.options()
	if err != nil {
		return err
	}
	co.Balancers = f.balancers
	// Transaction markers are kept (and not printed) so that -e sees the
	// offset of a marker that ends a partition.
	opts := append([]kgo.Opt{kgo.KeepControlRecords()}, groupOpts...)
	if f.partition >= 0 {
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {f.partition: start}}))
	} else {
		opts = append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(start))
	}
	cl, err := kafkaclient.New(co, opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if f.group != "" {
		// Commit what was printed before leaving the group (Close leaves).
		defer func() {
			cctx, cancel := cf.requestCtx(context.Background())
			defer cancel()
			if err := cl.CommitMarkedOffsets(cctx); err != nil {
				cf.g.Logger().Warn("committing offsets on exit failed", zap.String("group", f.group), zap.Error(err))
			}
		}()
	}

	out := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
	defer out.Flush()

	// Positions start where each partition starts: a partition whose
	// start is already at its end needs no record to be done.
	atEnd := func() bool {
		for p, end := range remaining {
			if end <= 0 {
				delete(remaining, p)
			}
		}
		return len(remaining) == 0
	}
	if f.exitAtEnd {
		// --offset applies only where the group has no commit.
		from := remaining
		if len(groupCommitted) > 0 {
			from = map[int32]int64{}
			for p, end := range remaining {
				if !groupCommitted[p] {
					from[p] = end
				}
			}
		}
		looked := startsAtEnd(ctx, adm, cf, topic, start, from)
		for p := range remaining {
			if _, ok := from[p]; !ok && !groupCommitted[p] {
				delete(remaining, p)
			}
		}
		if looked && atEnd() {
			return nil
		}
	}

	var printed int64
	var buf []byte
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil // Ctrl-C: a clean stop
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil && !errors.Is(err, context.Canceled) {
				ferr = fmt.Errorf("consuming topic %q partition %d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return cf.explain(ferr)
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if done {
				return
			}
			if f.exitAtEnd {
				end, ok := remaining[r.Partition]
				if !ok || r.Offset >= end {
					return // past the end we were asked to reach
				}
				if r.Offset+1 >= end {
					delete(remaining, r.Partition)
				}
			}
			if f.group != "" {
				cl.MarkCommitRecords(r)
			}
			if r.Attrs.IsControl() {
				return
			}
			if decodeValue != nil && r.Value != nil {
				v, err := decodeValue(ctx, r.Value)
				if err != nil {
					cf.g.Logger().Warn("skipping a record that does not decode as Avro", zap.String("topic", r.Topic),
						zap.Int32("partition", r.Partition), zap.Int64("offset", r.Offset), zap.Error(err))
					return
				}
				r.Value = v
			}
			buf = format.append(buf[:0], r)
			_, _ = out.Write(buf)
			printed++
			if f.count > 0 && printed >= f.count {
				done = true
			}
		})
		if err := out.Flush(); err != nil {
			return fmt.Errorf("writing records: %w", err)
		}
		if done || (f.exitAtEnd && len(remaining) == 0) {
			return nil
		}
	}
}

// startsAtEnd drops from remaining the partitions whose start offset is
// already at or past their end, and reports whether it looked them up.
func startsAtEnd(ctx context.Context, adm *kadm.Client, cf *clientFlags, topic string, start kgo.Offset, remaining map[int32]int64) bool {
	var starts kadm.ListedOffsets
	mctx, cancel := cf.requestCtx(ctx)
	defer cancel()
	switch s := start.EpochOffset().Offset; {
	case s == -1: // latest: nothing to read up to the start's end
		for p := range remaining {
			delete(remaining, p)
		}
		return true
	case s == -2: // earliest
		var err error
		starts, err = adm.ListStartOffsets(mctx, topic)
		if err != nil {
			return false
		}
	default:
		for p, end := range remaining {
			if s >= end {
				delete(remaining, p)
			}
		}
		return true
	}
	starts.Each(func(o kadm.ListedOffset) {
		if end, ok := remaining[o.Partition]; ok && o.Err == nil && o.Offset >= end {
			delete(remaining, o.Partition)
		}
	})
	return true
}

// recordFormat is a parsed --format.
type recordFormat []fmtPart

type fmtPart struct {
	lit  string
	verb byte // 0 for a literal
}

func parseRecordFormat(s string) (recordFormat, error) {
	var parts recordFormat
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, fmtPart{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+1 < len(s):
			i++
			switch v := s[i]; v {
			case '%':
				lit.WriteByte('%')
			case 't', 'p', 'o', 'k', 'v', 'T', 'h', 'K', 'S':
				flush()
				parts = append(parts, fmtPart{verb: v})
			default:
				return nil, fmt.Errorf("--format %q: unknown %%%c (known: %%t %%p %%o %%k %%v %%T %%h %%K %%S %%%%)", s, v)
			}
		case c == '%':
			return nil, fmt.Errorf("--format %q ends in a lone %%", s)
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				lit.WriteByte('\n')
			case 't':
				lit.WriteByte('\t')
			case 'r':
				lit.WriteByte('\r')
			case '\\':
				lit.WriteByte('\\')
			default:
				lit.WriteByte('\\')
				lit.WriteByte(s[i])
			}
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return parts, nil
}

func (f recordFormat) append(b []byte, r *kgo.Record) []byte {
	for _, p := range f {
		switch p.verb {
		case 0:
			b = append(b, p.lit...)
		case 't':
			b = append(b, r.Topic...)
		case 'p':
			b = strconv.AppendInt(b, int64(r.Partition), 10)
		case 'o':
			b = strconv.AppendInt(b, r.Offset, 10)
		case 'k':
			b = append(b, r.Key...)
		case 'v':
			b = append(b, r.Value...)
		case 'T':
			b = strconv.AppendInt(b, r.Timestamp.UnixMilli(), 10)
		case 'K':
			b = strconv.AppendInt(b, nullableLen(r.Key), 10)
		case 'S':
			b = strconv.AppendInt(b, nullableLen(r.Value), 10)
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, h.Key...)
				b = append(b, '=')
				b = append(b, h.Value...)
			}
		}
	}
	return b
}

func nullableLen(b []byte) int64 {
	if b == nil {
		return -1
	}
	return int64(len(b))
}

package file

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"weir/connectors"
)

// Source tails files into records. It implements connectors.Source and
// connectors.Committer; see the package documentation.
type Source struct {
	o       Options
	scanner *scanner
	log     *zap.Logger
	m       *connectors.Metrics

	files []*tracked
	byIno map[devIno]*tracked
	byKey map[string]*tracked
	known map[string]position // last position of files not open (restored or closed)

	firstScan bool // no scan done yet
	fresh     bool // no position was restored: start_at applies to the first scan
	lastScan  time.Time
	rr        int
	buf       []byte
	badPaths  map[string]string // path → last error logged, to log each problem once
	now       time.Time

	// per-Poll output
	out      []connectors.SourceRecord
	arena    []byte
	outBytes int

	raw   rawBoxes // raw mode (EmitRaw)
	isRaw bool
}

// rawBoxes are the field values raw records share, boxed once, and the
// slab their Fields slices are cut from.
type rawBoxes struct {
	slab     []connectors.RawField
	nowMs    int64
	now      any
	host     any
	path     string
	pathBox  any
	fieldMap any
}

// New returns a file source with o (defaults applied).
func New(o Options) (*Source, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	s := &Source{o: o, byIno: map[devIno]*tracked{}, byKey: map[string]*tracked{}, known: map[string]position{},
		badPaths: map[string]string{}, firstScan: true, log: zap.NewNop()}
	s.scanner = &scanner{onError: s.pathError}
	for _, p := range o.Include {
		g, err := compileGlob(p)
		if err != nil {
			return nil, fmt.Errorf("%w: include: %w", connectors.ErrConfig, err)
		}
		s.scanner.include = append(s.scanner.include, g)
	}
	for _, p := range o.Exclude {
		g, err := compileGlob(p)
		if err != nil {
			return nil, fmt.Errorf("%w: exclude: %w", connectors.ErrConfig, err)
		}
		s.scanner.exclude = append(s.scanner.exclude, g)
	}
	s.buf = make([]byte, 256<<10)
	return s, nil
}

// Open implements connectors.Source: it registers the event schema and
// restores the file positions.
func (s *Source) Open(ctx context.Context, sc connectors.SourceContext, restored map[string][]byte) error {
	s.log = sc.Logger()
	s.m = sc.Metrics()
	if err := s.o.Encoder.Init(ctx, s.o.Topic); err != nil {
		return err
	}
	for k, v := range restored {
		p, err := parsePosition(k, v)
		if err != nil {
			s.log.Warn("ignoring a stored file position that does not decode", zap.String("key", k), zap.Error(err))
			s.m.Error("position")
			continue
		}
		s.known[k] = p
	}
	s.fresh = len(restored) == 0
	return nil
}

// Poll implements connectors.Source.
func (s *Source) Poll(ctx context.Context, buf []connectors.SourceRecord) ([]connectors.SourceRecord, error) {
	deadline := time.Now().Add(time.Second)
	s.out = buf
	s.arena, s.outBytes = nil, 0
	defer func() { s.out, s.arena = nil, nil }()
	for {
		s.now = time.Now()
		if s.firstScan || s.now.Sub(s.lastScan) >= s.o.RescanInterval {
			s.rescan()
		}
		progress := s.readRound()
		s.housekeeping()
		if len(s.out) > len(buf) {
			return s.out, nil
		}
		if progress {
			continue
		}
		if s.now.After(deadline) {
			return s.out, nil
		}
		t := time.NewTimer(s.o.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return s.out, nil
		case <-t.C:
		}
	}
}

// EmitRaw implements connectors.RawSource: records carry the line as
// Value and the event's fields (timestamp, host, file, offset, message,
// truncated when true, fields when configured: those of the JSON
// encoding, in its order) instead of an encoded event.
func (s *Source) EmitRaw() {
	s.isRaw = true
	s.raw.host = s.o.Host
	if s.o.Fields != nil {
		s.raw.fieldMap = s.o.Fields
	}
}

// Committed implements connectors.Committer (nothing to do: files are
// closed by rotate_wait and close_inactive, their positions kept).
func (s *Source) Committed(map[string][]byte) {}

// Close closes every open file.
func (s *Source) Close() error {
	for _, t := range s.files {
		t.f.Close()
	}
	s.files = nil
	return nil
}

// pathError logs a problem with path once (until it changes or clears).
func (s *Source) pathError(path string, err error) {
	msg := err.Error()
	if s.badPaths[path] == msg {
		return
	}
	s.badPaths[path] = msg
	stage := "stat"
	switch {
	case os.IsPermission(err):
		stage = "permission"
	case isLoop(err):
		stage = "symlink_loop"
	}
	if s.m != nil {
		s.m.Error(stage)
	}
	s.log.Warn("cannot read file; skipping it until it changes", zap.String("path", path), zap.String("problem", stage), zap.Error(err))
}

// readRound reads one chunk from every open file with data, until the
// batch is full. It reports whether any byte was read.
func (s *Source) readRound() bool {
	progress := false
	n := len(s.files)
	for i := 0; i < n && !s.full(); i++ {
		t := s.files[(s.rr+i)%n]
		for !s.full() {
			got := s.readChunk(t)
			if got == 0 {
				break
			}
			progress = true
			if got < len(s.buf)/2 {
				break
			}
		}
	}
	if n > 0 {
		s.rr = (s.rr + 1) % n
	}
	return progress
}

func (s *Source) full() bool {
	return len(s.out) >= s.o.BatchRecords || s.outBytes >= 4<<20
}

// emit turns one event of t into a record.
func (s *Source) emit(t *tracked, msg []byte, start, end int64, truncated bool) {
	if truncated {
		s.m.Event("line_truncated")
	}
	if !utf8.Valid(msg) {
		s.m.Event("invalid_utf8")
		msg = bytes.ToValidUTF8(msg, []byte("\uFFFD"))
		if len(msg) > s.o.MaxLineBytes { // replacements are 3 bytes each
			cut := s.o.MaxLineBytes
			for cut > 0 && !utf8.RuneStart(msg[cut]) {
				cut--
			}
			msg, truncated = msg[:cut], true
		}
	}
	if s.isRaw {
		s.emitRaw(t, msg, start, end, truncated)
		return
	}
	need := len(msg) + len(t.path) + len(s.o.Host) + 96
	for k, v := range s.o.Fields {
		need += len(k) + len(v) + 20
	}
	if cap(s.arena)-len(s.arena) < need {
		s.arena = make([]byte, 0, max(need, 1<<20))
	}
	ev := Event{Time: s.now, Host: s.o.Host, File: t.path, Offset: start, Message: msg, Truncated: truncated, Fields: s.o.Fields}
	a := len(s.arena)
	s.arena = s.o.Encoder.Append(s.arena, &ev)
	val := s.arena[a:len(s.arena):len(s.arena)]
	s.outBytes += len(val)
	pos := t.positionAt(end)
	a = len(s.arena)
	s.arena = appendPosition(s.arena, t.small, pos)
	pb := s.arena[a:len(s.arena):len(s.arena)]
	t.lastPos = pos
	s.out = append(s.out, connectors.SourceRecord{Value: val, Timestamp: s.now, SourcePartition: t.key, Position: pb})
}

// emitRaw is emit in raw mode: the line is copied, the fields share
// their boxed values where they can.
func (s *Source) emitRaw(t *tracked, msg []byte, start, end int64, truncated bool) {
	if cap(s.arena)-len(s.arena) < len(msg)+64 {
		s.arena = make([]byte, 0, max(len(msg)+64, 1<<20))
	}
	a := len(s.arena)
	s.arena = append(s.arena, msg...)
	val := s.arena[a:len(s.arena):len(s.arena)]
	s.outBytes += len(val)
	pos := t.positionAt(end)
	a = len(s.arena)
	s.arena = appendPosition(s.arena, t.small, pos)
	pb := s.arena[a:len(s.arena):len(s.arena)]
	t.lastPos = pos

	r := &s.raw
	if ms := s.now.UnixMilli(); r.now == nil || ms != r.nowMs {
		r.nowMs, r.now = ms, ms
	}
	if r.pathBox == nil || r.path != t.path {
		r.path, r.pathBox = t.path, t.path
	}
	if cap(r.slab)-len(r.slab) < 7 {
		r.slab = make([]connectors.RawField, 0, 7*1024)
	}
	f := len(r.slab)
	r.slab = append(r.slab,
		connectors.RawField{Name: "timestamp", Value: r.now},
		connectors.RawField{Name: "host", Value: r.host},
		connectors.RawField{Name: "file", Value: r.pathBox},
		connectors.RawField{Name: "offset", Value: start},
		connectors.RawField{Name: "message", Value: val})
	if truncated {
		r.slab = append(r.slab, connectors.RawField{Name: "truncated", Value: true})
	}
	if r.fieldMap != nil {
		r.slab = append(r.slab, connectors.RawField{Name: "fields", Value: r.fieldMap})
	}
	fields := r.slab[f:len(r.slab):len(r.slab)]
	s.out = append(s.out, connectors.SourceRecord{Value: val, Timestamp: s.now, SourcePartition: t.key, Position: pb, Fields: fields})
}

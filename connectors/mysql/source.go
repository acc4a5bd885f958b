package mysql

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"weir/connectors"
)

// Source is the MySQL/MariaDB CDC source (connectors.Source).
//
// State machine, driven by Poll: no position → snapshot (snapshot_mode
// initial) or stream from the binlog end (never); a snapshot position →
// continue the snapshot; a binlog position → stream from it. Any error
// tears the current phase down; the next Poll starts again from the
// position of the last record Poll returned, which is exactly where the
// runtime would restore it after a restart, so nothing is lost or sent
// twice.
type Source struct {
	cfg Config
	sc  connectors.SourceContext
	log *zap.Logger
	enc encoder

	servers []string // host:port, in failover order (Config.Hosts or Host:Port)
	plain   sync.Map // host:port → true: ssl_mode preferred, the server has no TLS
	cur     int      // index of the server the source is on

	si      serverInfo
	started bool
	pos     Position // position of the last record returned
	havePos bool

	snap    *snapshotter
	st      *streamer
	pending error // error to return from the next Poll

	mu        sync.Mutex
	streaming bool // the binlog is being streamed (snapshot over)
}

// New returns a source for cfg (zero values take the spec's defaults).
func New(cfg Config) *Source {
	cfg = cfg.withDefaults()
	return &Source{cfg: cfg, servers: cfg.servers()}
}

// Open implements connectors.Source. It does not connect: connecting
// happens in Poll, so a server that is down or refuses the credentials
// is retried (ErrRetriable) rather than failing the task.
func (s *Source) Open(_ context.Context, sc connectors.SourceContext, restored map[string][]byte) error {
	s.sc, s.log = sc, sc.Logger()
	if len(s.cfg.Hosts) > 0 {
		if _, err := parseHosts(s.cfg.Hosts, s.cfg.Port); err != nil {
			return fmt.Errorf("%w: connector %q: %w", connectors.ErrConfig, s.cfg.Name, err)
		}
	}
	if len(s.servers) > 1 && s.cfg.PositionMode != "gtid" {
		return fmt.Errorf("%w: connector %q: hosts lists %d servers: failing over between them needs position_mode = \"gtid\", not %q",
			connectors.ErrConfig, s.cfg.Name, len(s.servers), s.cfg.PositionMode)
	}
	if b, ok := restored[SourcePartition]; ok {
		p, err := decodePosition(b)
		if err != nil {
			return fmt.Errorf("connector %q: %w", s.cfg.Name, err)
		}
		s.pos, s.havePos = p, true
	}
	switch s.cfg.Format {
	case "canal_json":
		s.enc = canalEncoder{}
	default:
		if s.cfg.RegistryURL == "" {
			return fmt.Errorf("%w: connector %q: schema_registry_url is required for format avro", connectors.ErrConfig, s.cfg.Name)
		}
		e, err := newAvroEncoder(s.cfg.ServerName, s.cfg.RegistryURL, s.cfg.RegistryConfig)
		if err != nil {
			return err
		}
		s.enc = e
	}
	return nil
}

// Poll implements connectors.Source.
func (s *Source) Poll(ctx context.Context, buf []connectors.SourceRecord) ([]connectors.SourceRecord, error) {
	if err := s.pending; err != nil {
		s.pending = nil
		return buf, err
	}
	n := len(buf)
	buf, err := s.poll(ctx, buf)
	if err != nil {
		s.teardown()
		if ctx.Err() != nil {
			return buf, nil
		}
		if len(buf) > n {
			// Hand over what was read; report the error next time.
			s.pending = err
			return buf, nil
		}
		return buf, err
	}
	return buf, nil
}

func (s *Source) poll(ctx context.Context, buf []connectors.SourceRecord) ([]connectors.SourceRecord, error) {
	if !s.started {
		if err := s.start(ctx); err != nil {
			return buf, err
		}
	}
	if s.snap != nil {
		buf, finished, err := s.snap.poll(ctx, buf)
		if err != nil {
			return buf, err
		}
		if finished {
			start := s.snap.start
			s.snap.close()
			s.snap = nil
			s.log.Info("snapshot finished; streaming", zap.String("position", start.String()))
			// The last snapshot record (if this run read any) carries this
			// position too; streaming starts where the snapshot is consistent.
			s.pos, s.havePos = Position{File: start.File, Pos: start.Pos, GTID: start.GTID, Win: start.Win}, true
			s.started = false // the next Poll starts streaming from s.pos
		}
		return buf, nil
	}
	return s.st.poll(ctx, buf)
}

// start connects and enters the phase s.pos calls for.
func (s *Source) start(ctx context.Context) error {
	c, err := s.connect(ctx)
	if err != nil {
		return err
	}
	si, err := s.inspect(c)
	if err != nil {
		c.Close()
		return err
	}
	s.si = si
	var from Position
	switch {
	case !s.havePos && s.cfg.SnapshotMode == "never":
		from, err = s.currentPosition(c, si)
		c.Close()
		if err != nil {
			return err
		}
		s.pos, s.havePos = from, true
	case !s.havePos:
		c.Close()
		return s.startSnapshot(ctx, nil)
	case s.pos.Snap != nil:
		c.Close()
		p := s.pos
		return s.startSnapshot(ctx, &p)
	default:
		from = s.pos
		err = s.checkPurged(c, from)
		c.Close()
		if err != nil {
			if errors.Is(err, ErrBinlogPurged) && s.cfg.OnPurgedBinlog == "snapshot" {
				s.log.Warn("binlog purged; taking a new snapshot (on_purged_binlog = snapshot)", zap.Error(err))
				s.sc.Metrics().Event("resnapshot")
				return s.startSnapshot(ctx, nil)
			}
			return err
		}
	}
	st, err := s.beginStream(ctx, from)
	if err != nil {
		if errors.Is(err, ErrBinlogPurged) && s.cfg.OnPurgedBinlog == "snapshot" {
			s.sc.Metrics().Event("resnapshot")
			return s.startSnapshot(ctx, nil)
		}
		return err
	}
	s.st, s.started = st, true
	s.mu.Lock()
	s.streaming = true
	s.mu.Unlock()
	return nil
}

func (s *Source) startSnapshot(ctx context.Context, from *Position) error {
	sn, err := s.beginSnapshot(ctx, from)
	if err != nil {
		return err
	}
	s.snap, s.started = sn, true
	return nil
}

// teardown ends the current phase after an error.
func (s *Source) teardown() {
	if s.snap != nil {
		s.snap.close()
		s.snap = nil
	}
	if s.st != nil {
		s.st.close()
		s.st = nil
	}
	s.started = false
}

// Close implements connectors.Source.
func (s *Source) Close() error {
	s.teardown()
	return nil
}

// snapDone reports whether the snapshot is over (for tests).
func (s *Source) snapDone() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streaming
}

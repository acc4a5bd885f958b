package mysql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"weir/connectors"
	"weir/internal/kafkaclient"
	"weir/schemas"
)

// Record headers of change records (see doc.go).
const (
	HeaderVersion = "weir.cdc.version" // decimal int64, monotonic in binlog order
	HeaderOp      = "weir.cdc.op"      // c, u, d, r
)

// Version string of the connector, in source.version.
const connectorVersion = "weir-mysql-1"

// tableState is a captured table at some schema: its topic, and once
// registered, its Avro schema ids.
type tableState struct {
	*Table
	topic    string
	keyID    int32
	valueID  int32
	resolved bool

	// Scratch maps reused for every record (the Avro encoder reads them
	// during the call only; Poll is single-goroutine).
	keyMap, beforeMap, afterMap map[string]any
}

// change is one row change, values in Avro native form per column.
type change struct {
	op            byte // 'c', 'u', 'd', 'r'
	t             *tableState
	before, after []any
	src           sourceInfo
}

type sourceInfo struct {
	serverID uint32
	tsMs     int64
	snapshot string // "true", "last", "false"
	gtid     string
	file     string
	pos      uint32 // start of the event (snapshot: the snapshot position)
	row      int
	txid     string
	txSeq    int
	txEnd    bool
	version  int64
}

// encoder turns changes into record keys and values.
type encoder interface {
	// prepare registers the table's schemas (once per table schema).
	prepare(ctx context.Context, t *tableState) error
	key(ctx context.Context, t *tableState, row []any) ([]byte, error)
	value(ctx context.Context, ch *change) ([]byte, error)
}

// avroEncoder writes Confluent-framed Avro, schemas registered under
// <topic>-key and <topic>-value.
type avroEncoder struct {
	server string
	cl     *sr.Client
	serde  *schemas.Serde

	env, src map[string]any // scratch, see tableState

	mu  sync.Mutex
	ids map[string]int32 // subject \x00 schema text → id
}

func newAvroEncoder(server, url string, props map[string]string) (*avroEncoder, error) {
	cl, err := kafkaclient.OpenRegistry(url, props)
	if err != nil {
		return nil, fmt.Errorf("%w: schema_registry_url: %v", connectors.ErrConfig, err)
	}
	return &avroEncoder{server: server, cl: cl, serde: schemas.NewSerde(nil), ids: map[string]int32{}}, nil
}

func (e *avroEncoder) register(ctx context.Context, subject, text string) (int32, error) {
	k := subject + "\x00" + text
	e.mu.Lock()
	id, ok := e.ids[k]
	e.mu.Unlock()
	if ok {
		return id, nil
	}
	parsed, err := schemas.Parse(text)
	if err != nil {
		return 0, fmt.Errorf("schema for %s: %w", subject, err)
	}
	ss, err := e.cl.CreateSchema(ctx, subject, sr.Schema{Schema: text, Type: sr.TypeAvro})
	if err != nil {
		var re *sr.ResponseError
		if errors.As(err, &re) && re.StatusCode == 409 {
			return 0, fmt.Errorf("registering the new schema of subject %s: it is incompatible with the registered versions (%s); change the subject's compatibility level (weir schema config %s NONE) or the table: %w",
				subject, re.Message, subject, connectors.ErrRetriable)
		}
		if errors.As(err, &re) && re.StatusCode < 500 && re.StatusCode != 408 && re.StatusCode != 429 {
			return 0, fmt.Errorf("registering schema of subject %s: %w", subject, err)
		}
		return 0, fmt.Errorf("registering schema of subject %s: %w: %w", subject, connectors.ErrRetriable, err)
	}
	e.serde.Add(int32(ss.ID), parsed)
	e.mu.Lock()
	e.ids[k] = int32(ss.ID)
	e.mu.Unlock()
	return int32(ss.ID), nil
}

func (e *avroEncoder) prepare(ctx context.Context, t *tableState) error {
	kid, err := e.register(ctx, t.topic+"-key", t.KeySchema(e.server))
	if err != nil {
		return err
	}
	vid, err := e.register(ctx, t.topic+"-value", t.ValueSchema(e.server))
	if err != nil {
		return err
	}
	t.keyID, t.valueID, t.resolved = kid, vid, true
	return nil
}

func (e *avroEncoder) key(ctx context.Context, t *tableState, row []any) ([]byte, error) {
	if t.keyMap == nil {
		t.keyMap = make(map[string]any, len(t.PK))
	}
	m := t.keyMap
	for _, i := range t.PK {
		m[t.Columns[i].Field] = row[i]
	}
	b, err := e.serde.AppendEncode(ctx, make([]byte, 0, 16+8*len(t.PK)), t.keyID, m)
	if err != nil {
		return nil, fmt.Errorf("key of %s: %w", t.fullName(), err)
	}
	return b, nil
}

func rowMap(t *tableState, row []any, scratch *map[string]any) any {
	if row == nil {
		return nil
	}
	if *scratch == nil {
		*scratch = make(map[string]any, len(t.Columns))
	}
	m := *scratch
	for i := range t.Columns {
		if c := &t.Columns[i]; !c.Skip {
			m[c.Field] = c.out(row[i])
		}
	}
	return m
}

func (e *avroEncoder) value(ctx context.Context, ch *change) ([]byte, error) {
	s := &ch.src
	var gtid, txid any
	if s.gtid != "" {
		gtid = s.gtid
	}
	if s.txid != "" {
		txid = s.txid
	}
	if e.env == nil {
		e.env = make(map[string]any, 5)
		e.src = make(map[string]any, 16)
		e.src["version"], e.src["connector"], e.src["name"] = connectorVersion, "mysql", e.server
	}
	src := e.src
	src["server_id"], src["ts_ms"], src["snapshot"] = int64(s.serverID), s.tsMs, s.snapshot
	src["db"], src["table"], src["gtid"], src["file"], src["pos"] = ch.t.DB, ch.t.Name, gtid, s.file, int64(s.pos)
	src["row"], src["txid"], src["tx_seq"], src["tx_end"] = int32(s.row), txid, int32(s.txSeq), s.txEnd
	env := e.env
	env["before"] = rowMap(ch.t, ch.before, &ch.t.beforeMap)
	env["after"] = rowMap(ch.t, ch.after, &ch.t.afterMap)
	env["op"], env["source"], env["ts_ms"] = opNames[ch.op], src, time.Now().UnixMilli()
	b, err := e.serde.AppendEncode(ctx, make([]byte, 0, 256), ch.t.valueID, env)
	if err != nil {
		return nil, fmt.Errorf("change of %s: %w", ch.t.fullName(), err)
	}
	return b, nil
}

// canalEncoder writes canal FlatMessage JSON, one row per message, with
// a JSON object of the primary key columns as the record key.
type canalEncoder struct{}

func (canalEncoder) prepare(context.Context, *tableState) error { return nil }

func (canalEncoder) key(_ context.Context, t *tableState, row []any) ([]byte, error) {
	m := make(map[string]any, len(t.PK))
	for _, i := range t.PK {
		m[t.Columns[i].Name] = canalString(&t.Columns[i], row[i])
	}
	return json.Marshal(m)
}

type flatMessage struct {
	Data      []map[string]any  `json:"data"`
	Database  string            `json:"database"`
	ES        int64             `json:"es"`
	ID        int64             `json:"id"`
	IsDdl     bool              `json:"isDdl"`
	MysqlType map[string]string `json:"mysqlType"`
	Old       []map[string]any  `json:"old"`
	PkNames   []string          `json:"pkNames"`
	SQL       string            `json:"sql"`
	SQLType   map[string]int    `json:"sqlType"`
	Table     string            `json:"table"`
	TS        int64             `json:"ts"`
	Type      string            `json:"type"`
	GTID      string            `json:"gtid,omitempty"`
}

var opNames = map[byte]string{'c': "c", 'u': "u", 'd': "d", 'r': "r"}

var canalTypes = map[byte]string{'c': "INSERT", 'r': "INSERT", 'u': "UPDATE", 'd': "DELETE"}

func (canalEncoder) value(_ context.Context, ch *change) ([]byte, error) {
	t := ch.t
	fm := flatMessage{Database: t.DB, Table: t.Name, ES: ch.src.tsMs, ID: ch.src.version, TS: time.Now().UnixMilli(),
		Type: canalTypes[ch.op], MysqlType: map[string]string{}, SQLType: map[string]int{}, GTID: ch.src.gtid}
	for _, i := range t.PK {
		fm.PkNames = append(fm.PkNames, t.Columns[i].Name)
	}
	row := ch.after
	if ch.op == 'd' {
		row = ch.before
	}
	data := map[string]any{}
	for i := range t.Columns {
		c := &t.Columns[i]
		if c.Skip {
			continue
		}
		fm.MysqlType[c.Name] = c.Type
		fm.SQLType[c.Name] = jdbcType(c)
		data[c.Name] = canalString(c, c.out(row[i]))
	}
	fm.Data = []map[string]any{data}
	if ch.op == 'u' {
		old := map[string]any{}
		for i := range t.Columns {
			c := &t.Columns[i]
			if c.Skip {
				continue
			}
			o, n := canalString(c, c.out(ch.before[i])), canalString(c, c.out(ch.after[i]))
			if o != n {
				old[c.Name] = o
			}
		}
		fm.Old = []map[string]any{old}
	}
	return json.Marshal(fm)
}

// canalString renders a native value the way canal does: strings, with
// null for SQL NULL.
func canalString(c *Column, v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return x
	case []byte:
		if c.Kind == kDecimal || c.Kind == kUlong {
			return decimalString(x, c.Scale)
		}
		return string(x)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

// decimalString renders Avro decimal bytes at scale as a decimal string.
func decimalString(b []byte, scale int) string {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(len(b)*8)))
	}
	r := new(big.Rat).SetFrac(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	return r.FloatString(scale)
}

func jdbcType(c *Column) int {
	switch c.Kind {
	case kInt:
		switch c.Bits {
		case 8:
			return -6
		case 16:
			return 5
		}
		return 4
	case kLong:
		return -5
	case kUlong, kDecimal:
		return 3
	case kFloat:
		return 7
	case kDouble:
		return 8
	case kBit:
		return -7
	case kDate:
		return 91
	case kTime:
		return 92
	case kDatetime, kTimestamp:
		return 93
	case kBytes:
		return 2004
	}
	return 12
}

// changeRecords appends the records of one change to out: one record,
// or for a delete a record and a tombstone, or for an update of the
// primary key a delete, a tombstone and a create.
func (s *Source) changeRecords(ctx context.Context, out []connectors.SourceRecord, ch *change) ([]connectors.SourceRecord, error) {
	t := ch.t
	if !t.resolved {
		if err := s.enc.prepare(ctx, t); err != nil {
			return out, err
		}
	}
	if ch.op == 'u' && !t.KeyAll && !samePK(t, ch.before, ch.after) || ch.op == 'u' && t.KeyAll && !sameRow(t, ch.before, ch.after) {
		// A primary key change: delete (and tombstone) the old key, then
		// create the new one; only the create can end the transaction.
		del := *ch
		del.op, del.after, del.src.txEnd = 'd', nil, false
		n := len(out)
		out, err := s.changeRecords(ctx, out, &del)
		if err != nil {
			return out, err
		}
		cr := *ch
		cr.op, cr.before = 'c', nil
		cr.src.txSeq += len(out) - n
		return s.changeRecords(ctx, out, &cr)
	}
	keyRow := ch.after
	if ch.op == 'd' {
		keyRow = ch.before
	}
	key, err := s.enc.key(ctx, t, keyRow)
	if err != nil {
		return out, err
	}
	val, err := s.enc.value(ctx, ch)
	if err != nil {
		return out, err
	}
	ver := []byte(strconv.FormatInt(ch.src.version, 10))
	ts := time.UnixMilli(ch.src.tsMs)
	out = append(out, connectors.SourceRecord{Topic: t.topic, Key: key, Value: val, Timestamp: ts,
		Headers: []kgo.RecordHeader{{Key: HeaderVersion, Value: ver}, {Key: HeaderOp, Value: []byte{ch.op}}}})
	if ch.op == 'd' && s.cfg.Tombstones {
		out = append(out, connectors.SourceRecord{Topic: t.topic, Key: key, Value: nil, Timestamp: ts,
			Headers: []kgo.RecordHeader{{Key: HeaderVersion, Value: ver}, {Key: HeaderOp, Value: []byte{'d'}}}})
	}
	return out, nil
}

func samePK(t *tableState, a, b []any) bool {
	for _, i := range t.PK {
		if !equalValue(a[i], b[i]) {
			return false
		}
	}
	return true
}

func sameRow(t *tableState, a, b []any) bool {
	for i := range t.Columns {
		if !t.Columns[i].Skip && !equalValue(a[i], b[i]) {
			return false
		}
	}
	return true
}

func equalValue(a, b any) bool {
	if ab, ok := a.([]byte); ok {
		bb, ok := b.([]byte)
		return ok && string(ab) == string(bb)
	}
	return a == b
}

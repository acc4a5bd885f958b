package mysql

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	gmysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// kind is how weir represents a column: its Avro type and the conversion
// of both binlog values and snapshot (text protocol) values to it.
type kind uint8

const (
	kUnsupported kind = iota
	kInt              // tinyint, smallint, mediumint, int → Avro int
	kLong             // int unsigned, bigint → long
	kUlong            // bigint unsigned → decimal(20,0) bytes
	kFloat            // float → float
	kDouble           // double → double
	kDecimal          // decimal(p,s) → decimal(p,s) bytes
	kBit              // bit(n) → long
	kYear             // year → int
	kDate             // date → string 2006-01-02
	kTime             // time(fsp) → string [-]HH:MM:SS[.ffffff]
	kDatetime         // datetime(fsp) → string 2006-01-02 15:04:05[.ffffff]
	kTimestamp        // timestamp(fsp) → string in UTC, same layout
	kString           // char, varchar, text, json (MySQL) → string
	kBytes            // binary, varbinary, blob → bytes
	kEnum             // enum → string (the member)
	kSet              // set → string (members joined by ",")
	kGeometry         // geometry and its subtypes → string, (E)WKT
	kUUID             // MariaDB uuid → string, as the server prints it (fixedbin.go)
	kInet6            // MariaDB inet6 → string, as the server prints it (fixedbin.go)
)

var kindNames = [...]string{"unsupported", "int", "long", "ulong", "float", "double", "decimal", "bit", "year",
	"date", "time", "datetime", "timestamp", "string", "bytes", "enum", "set", "geometry", "uuid", "inet6"}

func (k kind) String() string { return kindNames[k] }

// Column is one column of a table as weir sees it.
type Column struct {
	Name      string // MySQL name
	Field     string // Avro field name (Name made a valid Avro name)
	Kind      kind
	Nullable  bool
	Unsigned  bool
	Bits      int         // width of integer columns (8, 16, 24, 32, 64)
	Precision int         // decimal precision
	Scale     int         // decimal scale; fractional digits of time types
	FixedLen  int         // binary(n): values are right-padded with 0x00 to n bytes
	Values    []string    // enum and set members
	Type      string      // MySQL type as text, for messages and canal's mysqlType
	Charset   string      // character set of character columns (binlog bytes are in it)
	Skip      bool        // left out: unsupported (unsupported_columns = skip) or excluded (columns.go)
	rule      *columnRule // mask, hash or truncation of a table block (columns.go)
}

// Table is a table's schema at some binlog position.
type Table struct {
	DB, Name string
	Columns  []Column
	PK       []int // column indexes of the primary key; empty: none
	KeyAll   bool  // no primary key: keyed by all columns

	missingRules []string // columns the table block's rules name that the table lacks
}

// ErrUnsupportedColumn is wrapped when a captured table has a column of a
// type weir cannot represent and unsupported_columns is "fail".
var ErrUnsupportedColumn = errors.New("unsupported column type")

// ErrNoPrimaryKey is wrapped when a captured table has no primary key and
// no_primary_key is "fail".
var ErrNoPrimaryKey = errors.New("table has no primary key")

// ErrTableDropped is wrapped when a captured table is dropped while the
// snapshot is reading the tables.
var ErrTableDropped = errors.New("table dropped during the snapshot")

// ErrSchemaMismatch is wrapped when binlog rows cannot be decoded with the
// known schema (a server without binlog_row_metadata=FULL whose live
// schema moved on).
var ErrSchemaMismatch = errors.New("binlog rows do not match the table schema")

func (t *Table) fullName() string { return t.DB + "." + t.Name }

// resolve applies the table block's column rules, then the
// no_primary_key and unsupported_columns policies. skip is true when the
// table is not captured at all.
func (t *Table) resolve(cfg Config) (skip bool, err error) {
	if t.missingRules, err = t.applyRules(cfg); err != nil {
		return false, err
	}
	for i := range t.Columns {
		c := &t.Columns[i]
		if c.Kind != kUnsupported || c.Skip {
			continue
		}
		if cfg.UnsupportedCols != "skip" {
			return false, fmt.Errorf("%w: column %s.%s is %s; set unsupported_columns = \"skip\" to leave it out of the records", ErrUnsupportedColumn, t.fullName(), c.Name, c.Type)
		}
		for _, k := range t.PK {
			if k == i {
				return false, fmt.Errorf("%w: primary key column %s.%s is %s and cannot be skipped", ErrUnsupportedColumn, t.fullName(), c.Name, c.Type)
			}
		}
		c.Skip = true
	}
	if len(t.PK) == 0 {
		switch cfg.NoPrimaryKey {
		case "skip":
			return true, nil
		case "all_columns":
			t.KeyAll = true
			for i, c := range t.Columns {
				if !c.Skip {
					t.PK = append(t.PK, i)
				}
			}
		default:
			return false, fmt.Errorf("%w: %s; set no_primary_key = \"all_columns\" to key it by all its columns or \"skip\" to leave it out", ErrNoPrimaryKey, t.fullName())
		}
	}
	return false, nil
}

func avroName(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
			b.WriteRune(r)
		case r >= '0' && r <= '9':
			if i == 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

func (t *Table) assignFields() {
	seen := map[string]bool{}
	for i := range t.Columns {
		f := avroName(t.Columns[i].Name)
		for n := 2; seen[f]; n++ {
			f = avroName(t.Columns[i].Name) + "_" + strconv.Itoa(n)
		}
		seen[f] = true
		t.Columns[i].Field = f
	}
}

// fromTableMap builds the schema from a TableMapEvent carrying
// binlog_row_metadata=FULL metadata (column names). It returns ok=false
// when the event has no column names.
func fromTableMap(e *replication.TableMapEvent, flavor string, charsets map[uint64]string) (*Table, bool) {
	names := e.ColumnNameString()
	if len(names) != int(e.ColumnCount) {
		return nil, false
	}
	t := &Table{DB: string(e.Schema), Name: string(e.Table)}
	unsigned := unsignedMap(e, flavor)
	coll := e.CollationMap()
	esColl := e.EnumSetCollationMap()
	enums := e.EnumStrValueMap()
	sets := e.SetStrValueMap()
	for i := 0; i < int(e.ColumnCount); i++ {
		_, nullable := e.Nullable(i)
		c := Column{Name: names[i], Nullable: nullable}
		c.Kind, c.Precision, c.Scale, c.FixedLen, c.Type = binlogKind(e.ColumnType[i], e.ColumnMeta[i], unsigned[i], coll[i])
		c.Unsigned = unsigned[i]
		c.Bits = intBits[e.ColumnType[i]]
		if c.Kind == kEnum {
			c.Values = enums[i]
		} else if c.Kind == kSet {
			c.Values = sets[i]
		}
		switch c.Kind {
		case kString:
			c.setCharset(charsets, coll[i])
		case kEnum, kSet:
			c.setCharset(charsets, esColl[i])
			if c.Kind != kUnsupported && c.Charset == "latin1" {
				for j, m := range c.Values {
					c.Values[j] = decodeLatin1([]byte(m))
				}
			}
		}
		t.Columns = append(t.Columns, c)
	}
	for _, k := range e.PrimaryKey {
		t.PK = append(t.PK, int(k))
	}
	t.assignFields()
	return t, true
}

const binaryCollation = 63

// setCharset names the character set of collation id coll (0: the event
// has no charset metadata: assumed utf8mb4 as it cannot be known) and
// makes the column unsupported when weir cannot decode it.
func (c *Column) setCharset(charsets map[uint64]string, coll uint64) {
	if coll == 0 {
		c.Charset = "utf8mb4"
		return
	}
	cs, ok := charsets[coll]
	if !ok {
		cs = fmt.Sprintf("with collation id %d", coll)
	}
	c.Charset = cs
	if !decodable(cs) {
		c.Kind, c.Type = kUnsupported, c.Type+" character set "+cs
	}
}

// unsignedMap decodes the signedness bitmap (one bit per numeric column).
// go-mysql's TableMapEvent.UnsignedMap misaligns on MariaDB, which also
// gives BIT columns a bit (found by TestTypes).
func unsignedMap(e *replication.TableMapEvent, flavor string) map[int]bool {
	out := map[int]bool{}
	bit := 0
	for i := 0; i < int(e.ColumnCount); i++ {
		tp := e.ColumnType[i]
		numeric := e.IsNumericColumn(i) || (tp == gmysql.MYSQL_TYPE_BIT && flavor == gmysql.MariaDBFlavor)
		if !numeric {
			continue
		}
		if bit/8 < len(e.SignednessBitmap) && e.SignednessBitmap[bit/8]&(0x80>>uint(bit%8)) != 0 {
			out[i] = true
		}
		bit++
	}
	return out
}

var intBits = map[byte]int{gmysql.MYSQL_TYPE_TINY: 8, gmysql.MYSQL_TYPE_SHORT: 16, gmysql.MYSQL_TYPE_INT24: 24,
	gmysql.MYSQL_TYPE_LONG: 32, gmysql.MYSQL_TYPE_LONGLONG: 64}

var infoBits = map[string]int{"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "integer": 32, "bigint": 64}

// binlogKind maps a binlog column type and metadata to weir's kind.
func binlogKind(tp byte, meta uint16, unsigned bool, collation uint64) (k kind, prec, scale, fixed int, typ string) {
	u := ""
	if unsigned {
		u = " unsigned"
	}
	switch tp {
	case gmysql.MYSQL_TYPE_TINY:
		return kInt, 0, 0, 0, "tinyint" + u
	case gmysql.MYSQL_TYPE_SHORT:
		return kInt, 0, 0, 0, "smallint" + u
	case gmysql.MYSQL_TYPE_INT24:
		return kInt, 0, 0, 0, "mediumint" + u
	case gmysql.MYSQL_TYPE_LONG:
		if unsigned {
			return kLong, 0, 0, 0, "int unsigned"
		}
		return kInt, 0, 0, 0, "int"
	case gmysql.MYSQL_TYPE_LONGLONG:
		if unsigned {
			return kUlong, 20, 0, 0, "bigint unsigned"
		}
		return kLong, 0, 0, 0, "bigint"
	case gmysql.MYSQL_TYPE_FLOAT:
		return kFloat, 0, 0, 0, "float" + u
	case gmysql.MYSQL_TYPE_DOUBLE:
		return kDouble, 0, 0, 0, "double" + u
	case gmysql.MYSQL_TYPE_NEWDECIMAL:
		p, s := int(meta>>8), int(meta&0xff)
		return kDecimal, p, s, 0, fmt.Sprintf("decimal(%d,%d)%s", p, s, u)
	case gmysql.MYSQL_TYPE_BIT:
		return kBit, 0, 0, 0, fmt.Sprintf("bit(%d)", int(meta>>8)*8+int(meta&0xff))
	case gmysql.MYSQL_TYPE_YEAR:
		return kYear, 0, 0, 0, "year"
	case gmysql.MYSQL_TYPE_DATE, gmysql.MYSQL_TYPE_NEWDATE:
		return kDate, 0, 0, 0, "date"
	case gmysql.MYSQL_TYPE_TIME:
		return kTime, 0, 0, 0, "time"
	case gmysql.MYSQL_TYPE_TIME2:
		return kTime, 0, int(meta), 0, fsp("time", int(meta))
	case gmysql.MYSQL_TYPE_DATETIME:
		return kDatetime, 0, 0, 0, "datetime"
	case gmysql.MYSQL_TYPE_DATETIME2:
		return kDatetime, 0, int(meta), 0, fsp("datetime", int(meta))
	case gmysql.MYSQL_TYPE_TIMESTAMP:
		return kTimestamp, 0, 0, 0, "timestamp"
	case gmysql.MYSQL_TYPE_TIMESTAMP2:
		return kTimestamp, 0, int(meta), 0, fsp("timestamp", int(meta))
	case gmysql.MYSQL_TYPE_VARCHAR, gmysql.MYSQL_TYPE_VAR_STRING:
		if collation == binaryCollation {
			return kBytes, 0, 0, 0, "varbinary"
		}
		return kString, 0, 0, 0, "varchar"
	case gmysql.MYSQL_TYPE_STRING:
		real := byte(meta >> 8)
		switch real {
		case gmysql.MYSQL_TYPE_ENUM:
			return kEnum, 0, 0, 0, "enum"
		case gmysql.MYSQL_TYPE_SET:
			return kSet, 0, 0, 0, "set"
		}
		length := int(meta & 0xff)
		if meta >= 256 && real&0x30 != 0x30 {
			length = int(uint16(meta&0xff) | (uint16((real&0x30)^0x30) << 4))
		}
		if collation == binaryCollation {
			return kBytes, 0, 0, length, fmt.Sprintf("binary(%d)", length)
		}
		return kString, 0, 0, 0, "char"
	case gmysql.MYSQL_TYPE_BLOB, gmysql.MYSQL_TYPE_TINY_BLOB, gmysql.MYSQL_TYPE_MEDIUM_BLOB, gmysql.MYSQL_TYPE_LONG_BLOB:
		if collation == binaryCollation {
			return kBytes, 0, 0, 0, "blob"
		}
		return kString, 0, 0, 0, "text"
	case gmysql.MYSQL_TYPE_JSON:
		return kString, 0, 0, 0, "json"
	case gmysql.MYSQL_TYPE_ENUM:
		return kEnum, 0, 0, 0, "enum"
	case gmysql.MYSQL_TYPE_SET:
		return kSet, 0, 0, 0, "set"
	case gmysql.MYSQL_TYPE_GEOMETRY:
		return kGeometry, 0, 0, 0, "geometry"
	}
	return kUnsupported, 0, 0, 0, fmt.Sprintf("binlog type %d", tp)
}

func fsp(name string, n int) string {
	if n == 0 {
		return name
	}
	return fmt.Sprintf("%s(%d)", name, n)
}

// infoColumn is one row of information_schema.COLUMNS.
type infoColumn struct {
	Name, DataType, ColumnType string
	Nullable                   bool
	Precision, Scale           int
	DatetimePrecision          int
	Charset                    string // "" for binary types
	OctetLength                int64
}

// fromInfoSchema builds the schema from information_schema rows (used
// by the snapshot, and for servers without FULL row metadata).
func fromInfoSchema(db, name string, cols []infoColumn, pk []string) *Table {
	t := &Table{DB: db, Name: name}
	for _, ic := range cols {
		c := Column{Name: ic.Name, Nullable: ic.Nullable, Type: ic.ColumnType}
		unsigned := strings.Contains(ic.ColumnType, "unsigned")
		c.Unsigned, c.Bits = unsigned, infoBits[ic.DataType]
		switch ic.DataType {
		case "tinyint", "smallint", "mediumint":
			c.Kind = kInt
		case "int", "integer":
			c.Kind = kInt
			if unsigned {
				c.Kind = kLong
			}
		case "bigint":
			c.Kind = kLong
			if unsigned {
				c.Kind, c.Precision = kUlong, 20
			}
		case "float":
			c.Kind = kFloat
		case "double", "real", "double precision":
			c.Kind = kDouble
		case "decimal", "numeric":
			c.Kind, c.Precision, c.Scale = kDecimal, ic.Precision, ic.Scale
		case "bit":
			c.Kind = kBit
		case "year":
			c.Kind = kYear
		case "date":
			c.Kind = kDate
		case "time":
			c.Kind, c.Scale = kTime, ic.DatetimePrecision
		case "datetime":
			c.Kind, c.Scale = kDatetime, ic.DatetimePrecision
		case "timestamp":
			c.Kind, c.Scale = kTimestamp, ic.DatetimePrecision
		case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json":
			c.Kind = kString
			if ic.Charset == "" || ic.Charset == "binary" {
				c.Kind = kBytes
			}
		case "binary":
			c.Kind, c.FixedLen = kBytes, int(ic.OctetLength)
		case "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
			c.Kind = kBytes
		case "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
			"geometrycollection", "geomcollection":
			c.Kind = kGeometry
		case "enum":
			c.Kind, c.Values = kEnum, parseMembers(ic.ColumnType)
		case "set":
			c.Kind, c.Values = kSet, parseMembers(ic.ColumnType)
		case "uuid":
			c.Kind = kUUID
		case "inet6":
			c.Kind = kInet6
		default:
			c.Kind = kUnsupported
		}
		if ic.Charset != "" && ic.Charset != "binary" && (c.Kind == kString || c.Kind == kEnum || c.Kind == kSet) {
			c.Charset = ic.Charset
			if !decodable(ic.Charset) {
				c.Kind, c.Type = kUnsupported, c.Type+" character set "+ic.Charset
			}
		}
		t.Columns = append(t.Columns, c)
	}
	for _, p := range pk {
		for i, c := range t.Columns {
			if c.Name == p {
				t.PK = append(t.PK, i)
			}
		}
	}
	t.assignFields()
	return t
}

// parseMembers parses enum('a','b”c') / set(...) member lists.
func parseMembers(colType string) []string {
	i := strings.IndexByte(colType, '(')
	if i < 0 {
		return nil
	}
	s := colType[i+1:]
	var out []string
	for {
		if len(s) == 0 || s[0] != '\'' {
			return out
		}
		s = s[1:]
		var b strings.Builder
		for len(s) > 0 {
			if s[0] == '\'' {
				if len(s) > 1 && s[1] == '\'' {
					b.WriteByte('\'')
					s = s[2:]
					continue
				}
				s = s[1:]
				break
			}
			if s[0] == '\\' && len(s) > 1 {
				b.WriteByte(s[1])
				s = s[2:]
				continue
			}
			b.WriteByte(s[0])
			s = s[1:]
		}
		out = append(out, b.String())
		if len(s) > 0 && s[0] == ',' {
			s = s[1:]
		}
	}
}

// checkAgainstMap verifies that a schema taken from information_schema
// can decode rows described by a TableMapEvent without FULL metadata:
// same column count and the same kind for every column.
func (t *Table) checkAgainstMap(e *replication.TableMapEvent, flavor string) error {
	if int(e.ColumnCount) != len(t.Columns) {
		return fmt.Errorf("%w: binlog rows of %s have %d columns, the table now has %d; the server must log binlog_row_metadata=FULL (MariaDB 10.5+, MySQL 8.0.1+) for weir to decode rows written before a DDL",
			ErrSchemaMismatch, t.fullName(), e.ColumnCount, len(t.Columns))
	}
	unsigned := unsignedMap(e, flavor)
	coll := e.CollationMap()
	for i, c := range t.Columns {
		k, _, _, _, typ := binlogKind(e.ColumnType[i], e.ColumnMeta[i], unsigned[i], coll[i])
		live := c.Kind
		if live == kUUID || live == kInet6 {
			live = kBytes // logged as BINARY(16)
		}
		if k != live && !(coll == nil && (k == kString || k == kBytes) && (live == kString || live == kBytes)) {
			return fmt.Errorf("%w: column %d (%s) of %s is %s in the binlog but %s in the live schema; enable binlog_row_metadata=FULL",
				ErrSchemaMismatch, i+1, c.Name, t.fullName(), typ, c.Type)
		}
	}
	return nil
}

// fingerprint identifies a TableMapEvent's table definition (types,
// metadata, names, nullability) to reuse a decoded Table.
func mapFingerprint(e *replication.TableMapEvent) []byte {
	var b bytes.Buffer
	b.Write(e.Schema)
	b.WriteByte(0)
	b.Write(e.Table)
	b.WriteByte(0)
	b.Write(e.ColumnType)
	for _, m := range e.ColumnMeta {
		b.WriteByte(byte(m))
		b.WriteByte(byte(m >> 8))
	}
	b.Write(e.NullBitmap)
	b.Write(e.SignednessBitmap)
	for _, n := range e.ColumnName {
		b.Write(n)
		b.WriteByte(0)
	}
	for _, k := range e.PrimaryKey {
		b.WriteByte(byte(k))
	}
	for _, vs := range e.EnumStrValue {
		for _, v := range vs {
			b.Write(v)
			b.WriteByte(0)
		}
	}
	for _, vs := range e.SetStrValue {
		for _, v := range vs {
			b.Write(v)
			b.WriteByte(0)
		}
	}
	for _, c := range e.DefaultCharset {
		b.WriteByte(byte(c))
	}
	for _, c := range e.ColumnCharset {
		b.WriteByte(byte(c))
	}
	return b.Bytes()
}

// avroType is the Avro type of c (without nullability).
func (c *Column) avroType() any {
	if c.rule != nil && c.rule.stringOut() {
		return "string"
	}
	switch c.Kind {
	case kInt, kYear:
		return "int"
	case kLong, kBit:
		return "long"
	case kFloat:
		return "float"
	case kDouble:
		return "double"
	case kUlong, kDecimal:
		return map[string]any{"type": "bytes", "logicalType": "decimal", "precision": c.Precision, "scale": c.Scale}
	case kBytes:
		return "bytes"
	}
	return "string"
}

func (c *Column) avroDefault() any {
	if c.rule != nil && c.rule.stringOut() {
		return ""
	}
	switch c.Kind {
	case kInt, kYear, kLong, kBit, kFloat, kDouble:
		return 0
	case kUlong, kDecimal:
		return "\u0000"
	}
	return ""
}

// avroRecord is the Avro record schema of the columns idx (all when nil)
// named name.
func (t *Table) avroRecord(name string, idx []int, withDefaults bool) map[string]any {
	var fields []any
	add := func(c *Column) {
		if c.Skip {
			return
		}
		f := map[string]any{"name": c.Field}
		if c.Nullable {
			f["type"] = []any{"null", c.avroType()}
			if withDefaults {
				f["default"] = nil
			}
		} else {
			f["type"] = c.avroType()
			if withDefaults {
				f["default"] = c.avroDefault()
			}
		}
		fields = append(fields, f)
	}
	if idx == nil {
		for i := range t.Columns {
			add(&t.Columns[i])
		}
	} else {
		for _, i := range idx {
			add(&t.Columns[i])
		}
	}
	if fields == nil {
		fields = []any{}
	}
	return map[string]any{"type": "record", "name": name, "fields": fields}
}

func (t *Table) namespace(server string) string {
	return avroName(server) + "." + avroName(t.DB) + "." + avroName(t.Name)
}

// KeySchema is the Avro schema of the table's record keys.
func (t *Table) KeySchema(server string) string {
	r := t.avroRecord("Key", t.PK, false)
	r["namespace"] = t.namespace(server)
	b, _ := json.Marshal(r)
	return string(b)
}

// sourceSchema is the Avro schema of the envelope's source block.
var sourceSchema = map[string]any{
	"type": "record", "name": "Source", "namespace": "weir.mysql",
	"fields": []any{
		map[string]any{"name": "version", "type": "string"},
		map[string]any{"name": "connector", "type": "string"},
		map[string]any{"name": "name", "type": "string"},
		map[string]any{"name": "server_id", "type": "long"},
		map[string]any{"name": "ts_ms", "type": "long"},
		map[string]any{"name": "snapshot", "type": "string"},
		map[string]any{"name": "db", "type": "string"},
		map[string]any{"name": "table", "type": "string"},
		map[string]any{"name": "gtid", "type": []any{"null", "string"}, "default": nil},
		map[string]any{"name": "file", "type": "string"},
		map[string]any{"name": "pos", "type": "long"},
		map[string]any{"name": "row", "type": "int"},
		map[string]any{"name": "txid", "type": []any{"null", "string"}, "default": nil},
		map[string]any{"name": "tx_seq", "type": "int", "default": 0},
		map[string]any{"name": "tx_end", "type": "boolean", "default": false},
	},
}

// ValueSchema is the Avro schema of the table's change envelopes.
func (t *Table) ValueSchema(server string) string {
	val := t.avroRecord("Value", nil, true)
	env := map[string]any{
		"type": "record", "name": "Envelope", "namespace": t.namespace(server),
		"fields": []any{
			map[string]any{"name": "before", "type": []any{"null", val}, "default": nil},
			map[string]any{"name": "after", "type": []any{"null", "Value"}, "default": nil},
			map[string]any{"name": "op", "type": "string"},
			map[string]any{"name": "source", "type": sourceSchema},
			map[string]any{"name": "ts_ms", "type": "long"},
		},
	}
	b, _ := json.Marshal(env)
	return string(b)
}

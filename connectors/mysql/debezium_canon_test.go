package mysql

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
)

// Canonical values of TestDebeziumDifferential (debezium_test.go): the
// table's (as dzTruth reads it), weir's and Debezium's, one text per
// column kind (dzKind), so that equal values compare equal whatever each
// side's representation.

// dzServer canonicalises a value read by dzTruth ("NULL" is SQL NULL:
// no expression above yields that text for a non-NULL value).
func dzServer(c dzColumn, s string) (string, error) {
	if s == "NULL" {
		return "NULL", nil
	}
	switch c.kind {
	case dzInt, dzBit, dzYear:
		return s, nil
	case dzDecimal:
		return canonDecimal(s)
	case dzFloat:
		f, err := strconv.ParseFloat(s, 64)
		return strconv.FormatFloat(float64(float32(f)), 'g', -1, 32), err
	case dzDouble:
		f, err := strconv.ParseFloat(s, 64)
		return strconv.FormatFloat(f, 'g', -1, 64), err
	case dzDate:
		return s, nil
	case dzDatetime:
		return canonDatetime(s)
	case dzTime:
		return canonTime(s)
	case dzTimestamp:
		// UNIX_TIMESTAMP: seconds with the column's fraction digits; 0
		// for the zero timestamp (1970-01-01 00:00:00 UTC itself is not
		// a valid TIMESTAMP).
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			return "", fmt.Errorf("UNIX_TIMESTAMP %q", s)
		}
		if r.Sign() == 0 {
			return "zero", nil
		}
		us := new(big.Rat).Mul(r, big.NewRat(1e6, 1))
		if !us.IsInt() {
			return "", fmt.Errorf("UNIX_TIMESTAMP %q has sub-microsecond digits", s)
		}
		return "unix-us " + us.Num().String(), nil
	case dzText:
		b, err := hex.DecodeString(s)
		return string(b), err
	case dzBytes:
		return strings.ToLower(s), nil
	case dzGeometry:
		return s, nil
	}
	return "", fmt.Errorf("kind %d", c.kind)
}

func canonDecimal(s string) (string, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return "", fmt.Errorf("decimal %q", s)
	}
	return ratText(r), nil
}

func ratText(r *big.Rat) string {
	t := r.FloatString(40)
	t = strings.TrimRight(t, "0")
	t = strings.TrimSuffix(t, ".")
	if t == "-0" {
		t = "0"
	}
	return t
}

// canonDatetime: "YYYY-MM-DD hh:mm:ss[.f...]" → 6 fraction digits. The
// date part is kept as it is (zero dates and zero parts included).
func canonDatetime(s string) (string, error) {
	if len(s) < 19 || s[10] != ' ' {
		return "", fmt.Errorf("datetime %q", s)
	}
	frac := ""
	if len(s) > 19 {
		if s[19] != '.' {
			return "", fmt.Errorf("datetime %q", s)
		}
		frac = s[20:]
	}
	if len(frac) > 6 {
		return "", fmt.Errorf("datetime %q has more than 6 fraction digits", s)
	}
	return s[:19] + "." + frac + strings.Repeat("0", 6-len(frac)), nil
}

// canonTime: "[-]h...h:mm:ss[.f...]" → signed microseconds.
func canonTime(s string) (string, error) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	frac := ""
	if i := strings.IndexByte(s, '.'); i >= 0 {
		s, frac = s[:i], s[i+1:]
	}
	p := strings.Split(s, ":")
	if len(p) != 3 || len(frac) > 6 {
		return "", fmt.Errorf("time %q", s)
	}
	h, err1 := strconv.ParseInt(p[0], 10, 64)
	m, err2 := strconv.ParseInt(p[1], 10, 64)
	sec, err3 := strconv.ParseInt(p[2], 10, 64)
	f := int64(0)
	var err4 error
	if frac != "" {
		f, err4 = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
	}
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			return "", fmt.Errorf("time %q: %v", s, err)
		}
	}
	us := ((h*60+m)*60+sec)*1e6 + f
	if neg {
		us = -us
	}
	return strconv.FormatInt(us, 10), nil
}

// dzWeir canonicalises a value of weir's Avro envelope (decoded by
// schemas.Serde: nullable fields as single-entry unions). weir's
// representations (doc.go): integers as int/long, BIGINT UNSIGNED as
// decimal(20,0), DECIMAL as decimal (a *big.Rat), FLOAT as float, DOUBLE
// as double, BIT as a long holding the bits (BIT(64) with the top bit
// set is negative: read as unsigned), YEAR as int, DATE as "YYYY-MM-DD",
// DATETIME as wall-clock text with the column's fraction digits, TIME as
// "[-]hh:mm:ss[.f]", TIMESTAMP as the UTC wall clock of the instant
// ("YYYY-MM-DD hh:mm:ss[.f]", "0000-00-00 00:00:00" for the zero
// timestamp), character data as string, binary data as bytes, spatial
// data as (E)WKT: "SRID=n;" when n is not 0, then WKT, normalised by
// the server (dzWKT).
func dzWeir(e *env, c dzColumn, v any) (string, error) {
	v = native(v)
	if v == nil {
		return "NULL", nil
	}
	switch c.kind {
	case dzInt, dzYear:
		switch x := v.(type) {
		case int32:
			return strconv.FormatInt(int64(x), 10), nil
		case int64:
			return strconv.FormatInt(x, 10), nil
		case *big.Rat:
			if !x.IsInt() {
				return "", fmt.Errorf("integer column as decimal %s", x)
			}
			return x.Num().String(), nil
		}
	case dzBit:
		switch x := v.(type) {
		case int64:
			return strconv.FormatUint(uint64(x), 10), nil
		case int32:
			return strconv.FormatUint(uint64(uint32(x)), 10), nil
		case bool:
			if x {
				return "1", nil
			}
			return "0", nil
		}
	case dzDecimal:
		if x, ok := v.(*big.Rat); ok {
			return ratText(x), nil
		}
	case dzFloat:
		switch x := v.(type) {
		case float32:
			return strconv.FormatFloat(float64(x), 'g', -1, 32), nil
		case float64:
			return strconv.FormatFloat(float64(float32(x)), 'g', -1, 32), nil
		}
	case dzDouble:
		if x, ok := v.(float64); ok {
			return strconv.FormatFloat(x, 'g', -1, 64), nil
		}
	case dzDate:
		if x, ok := v.(string); ok {
			return x, nil
		}
	case dzDatetime:
		if x, ok := v.(string); ok {
			return canonDatetime(x)
		}
	case dzTime:
		if x, ok := v.(string); ok {
			return canonTime(x)
		}
	case dzTimestamp:
		if x, ok := v.(string); ok {
			if strings.HasPrefix(x, "0000-00-00") {
				return "zero", nil
			}
			x = strings.TrimSuffix(strings.Replace(x, "T", " ", 1), "Z")
			ts, err := time.Parse("2006-01-02 15:04:05.999999999", x)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("unix-us %d", ts.UnixMicro()), nil
		}
	case dzText:
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			return "", fmt.Errorf("character data as bytes %x", x)
		}
	case dzBytes:
		if x, ok := v.([]byte); ok {
			return hex.EncodeToString(x), nil
		}
	case dzGeometry:
		if x, ok := v.(string); ok {
			srid := "0"
			if rest, ok := strings.CutPrefix(x, "SRID="); ok {
				var found bool
				srid, x, found = strings.Cut(rest, ";")
				if !found {
					return "", fmt.Errorf("EWKT %q without ';'", v)
				}
			}
			return dzWKT(e, fmt.Sprintf("ST_GeomFromText(%s, %s)", sqlString(x), srid))
		}
	}
	return "", fmt.Errorf("unexpected %T %v", v, v)
}

// dzDebezium canonicalises a value of Debezium's envelope as the launcher
// writes it (debeziumtest.Event: json.Number, string, bool, nil), using
// the Connect schema type and name the launcher reports (typ). With the
// settings debeziumtest uses:
//   - integers: JSON numbers; BIGINT UNSIGNED (precise mode) a Connect
//     Decimal written as its plain decimal string;
//   - DECIMAL: a string (decimal.handling.mode=string);
//   - FLOAT/DOUBLE: FLOAT32/FLOAT64 numbers printed by Java's
//     Float/Double.toString (which round-trip);
//   - BIT(1): BOOLEAN; BIT(n>1): io.debezium.data.Bits, bytes (base64 in
//     the launcher's JSON) holding the bits little-endian;
//   - YEAR: io.debezium.time.Year, the year number;
//   - DATE: io.debezium.time.Date, days since 1970-01-01;
//   - DATETIME(0-3): io.debezium.time.Timestamp, milliseconds since
//     1970-01-01 00:00:00 of the wall clock read as UTC; DATETIME(4-6):
//     io.debezium.time.MicroTimestamp, microseconds likewise;
//   - TIME: io.debezium.time.MicroTime, signed microseconds
//     (adaptive_time_microseconds);
//   - TIMESTAMP: io.debezium.time.ZonedTimestamp, ISO-8601 text in UTC;
//   - character data, ENUM, SET, JSON: strings;
//   - binary data: base64 strings (binary.handling.mode=base64);
//   - spatial data: io.debezium.data.geometry.Geometry, a struct of wkb
//     (OGC WKB, base64) and srid, normalised by the server (dzWKT).
func dzDebezium(e *env, c dzColumn, typ string, v any) (string, error) {
	if v == nil {
		return "NULL", nil
	}
	num := func() (int64, error) {
		n, ok := v.(json.Number)
		if !ok {
			return 0, fmt.Errorf("%s: not a number: %T %v", typ, v, v)
		}
		return n.Int64()
	}
	name := ""
	if i := strings.IndexByte(typ, ' '); i >= 0 {
		name = typ[i+1:]
	}
	switch c.kind {
	case dzInt, dzYear:
		switch x := v.(type) {
		case json.Number:
			return canonDecimal(x.String())
		case string: // Connect Decimal (bigint unsigned, precise)
			return canonDecimal(x)
		}
	case dzBit:
		switch x := v.(type) {
		case bool:
			if x {
				return "1", nil
			}
			return "0", nil
		case string:
			b, err := base64.StdEncoding.DecodeString(x)
			if err != nil {
				return "", err
			}
			var n uint64
			for i := len(b) - 1; i >= 0; i-- { // little-endian
				n = n<<8 | uint64(b[i])
			}
			return strconv.FormatUint(n, 10), nil
		}
	case dzDecimal:
		if x, ok := v.(string); ok {
			return canonDecimal(x)
		}
	case dzFloat:
		if x, ok := v.(json.Number); ok {
			f, err := strconv.ParseFloat(x.String(), 32)
			return strconv.FormatFloat(f, 'g', -1, 32), err
		}
	case dzDouble:
		if x, ok := v.(json.Number); ok {
			f, err := strconv.ParseFloat(x.String(), 64)
			return strconv.FormatFloat(f, 'g', -1, 64), err
		}
	case dzDate:
		n, err := num()
		if err != nil {
			return "", err
		}
		return time.Unix(n*86400, 0).UTC().Format("2006-01-02"), nil
	case dzDatetime:
		n, err := num()
		if err != nil {
			return "", err
		}
		switch name {
		case "io.debezium.time.Timestamp":
			return time.UnixMilli(n).UTC().Format("2006-01-02 15:04:05.000000"), nil
		case "io.debezium.time.MicroTimestamp":
			return time.UnixMicro(n).UTC().Format("2006-01-02 15:04:05.000000"), nil
		}
		return "", fmt.Errorf("datetime as %s", typ)
	case dzTime:
		if name != "io.debezium.time.MicroTime" {
			return "", fmt.Errorf("time as %s", typ)
		}
		n, err := num()
		return strconv.FormatInt(n, 10), err
	case dzTimestamp:
		if x, ok := v.(string); ok {
			ts, err := time.Parse(time.RFC3339Nano, x)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("unix-us %d", ts.UnixMicro()), nil
		}
	case dzText:
		if x, ok := v.(string); ok {
			return x, nil
		}
	case dzBytes:
		if x, ok := v.(string); ok {
			b, err := base64.StdEncoding.DecodeString(x)
			return hex.EncodeToString(b), err
		}
	case dzGeometry:
		if x, ok := v.(map[string]any); ok {
			w, _ := x["wkb"].(string)
			b, err := base64.StdEncoding.DecodeString(w)
			if err != nil {
				return "", fmt.Errorf("geometry wkb %q: %v", w, err)
			}
			srid := "0"
			if n, ok := x["srid"].(json.Number); ok {
				srid = n.String()
			}
			return dzWKT(e, fmt.Sprintf("ST_GeomFromWKB(X'%x', %s)", b, srid))
		}
	}
	return "", fmt.Errorf("unexpected %s %T %v", typ, v, v)
}

// dzWKT is the canonical text of a spatial value as a tool delivered it:
// the server parses it (expr: ST_GeomFromText or ST_GeomFromWKB of the
// tool's value) and prints it as dzTruth does, so the two compare
// geometries, not number formatting.
func dzWKT(e *env, expr string) (string, error) {
	r := e.db.Query(e.t, "", "SELECT CONCAT(IF(ST_SRID(g) <> 0, CONCAT('SRID=', ST_SRID(g), ';'), ''), ST_AsText(g)) FROM (SELECT "+expr+" AS g) x")
	if len(r) != 1 || r[0][0] == "NULL" {
		return "", fmt.Errorf("the server cannot read %s", expr)
	}
	return r[0][0], nil
}

func sqlString(s string) string {
	return "'" + strings.NewReplacer("\\", "\\\\", "'", "''").Replace(s) + "'"
}

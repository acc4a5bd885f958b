package mysql

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/client"
)

// Character sets. The snapshot reads through a utf8mb4 session (connect
// sets it and checks that the server agreed), so the server converts
// every character column to UTF-8. The binlog carries a character
// column's bytes in the column's own character set (named by collation
// id in the TableMapEvent's FULL metadata, or by information_schema), so
// the streamer decodes them here. Only character sets weir decodes
// exactly are accepted; a column in any other is an unsupported column
// in both paths (unsupported_columns decides), never mangled text.

// decodable reports whether weir decodes character set cs.
func decodable(cs string) bool {
	switch cs {
	case "utf8mb4", "utf8mb3", "utf8", "ascii", "latin1":
		return true
	}
	return false
}

// latin1High is MySQL's latin1 (Windows-1252, with 0x81, 0x8D, 0x8F,
// 0x90 and 0x9D mapped to the C1 controls of the same value) for bytes
// 0x80–0x9F; every other byte is its own code point.
var latin1High = [32]rune{
	0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
	0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
	0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
	0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
}

// decodeLatin1 converts MySQL latin1 bytes to UTF-8.
func decodeLatin1(b []byte) string {
	ascii := true
	for _, c := range b {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + len(b)/2)
	for _, c := range b {
		switch {
		case c < 0x80:
			sb.WriteByte(c)
		case c < 0xA0:
			sb.WriteRune(latin1High[c-0x80])
		default:
			sb.WriteRune(rune(c))
		}
	}
	return sb.String()
}

// binlogText converts a binlog value of a character column in charset
// cs to a UTF-8 string value (other values pass unchanged).
func binlogText(v any, cs string) any {
	if cs != "latin1" {
		return v
	}
	switch x := v.(type) {
	case string:
		return decodeLatin1([]byte(x))
	case []byte:
		return decodeLatin1(x)
	}
	return v
}

// ErrCharset is wrapped when the server does not give the connector a
// utf8mb4 session.
var ErrCharset = fmt.Errorf("%w: the server did not give a utf8mb4 session", ErrServerConfig)

// sessionCharset makes c's session utf8mb4 and UTC and checks that the
// server agreed: go-mysql's handshake asks for a collation MariaDB does
// not know (utf8mb4_0900_ai_ci), which silently leaves the session in the
// server's default character set, and its SetCharset skips SET NAMES
// when it believes the session is utf8mb4 already.
func (s *Source) sessionCharset(c *client.Conn) error {
	if _, err := c.Execute("SET NAMES utf8mb4, time_zone = '+00:00'"); err != nil {
		return s.classify("setting the session character set (SET NAMES utf8mb4) and time_zone", err)
	}
	row, err := queryString(c, "SELECT @@character_set_client, @@character_set_connection, @@character_set_results, @@time_zone")
	if err != nil {
		return s.classify("reading the session character set", err)
	}
	if len(row) != 4 || row[0] != "utf8mb4" || row[1] != "utf8mb4" || row[2] != "utf8mb4" {
		return fmt.Errorf("%w: %s answers character_set_client/connection/results = %s after SET NAMES utf8mb4; weir needs utf8mb4 sessions to read text exactly (MariaDB 5.5+ or MySQL 5.5.3+, and no proxy or init_connect that changes the session character set)",
			ErrCharset, s.addr(), strings.Join(row, "/"))
	}
	if row[3] != "+00:00" {
		return fmt.Errorf("%w: %s answers time_zone = %s after SET time_zone = '+00:00'", ErrServerConfig, s.addr(), row[3])
	}
	return nil
}

// collationCharsets maps the server's collation ids to character set
// names (the binlog names a column's character set by collation id).
func collationCharsets(c *client.Conn) (map[uint64]string, error) {
	r, err := c.Execute("SELECT ID, CHARACTER_SET_NAME FROM information_schema.COLLATIONS")
	if err != nil {
		return nil, err
	}
	defer r.Close()
	m := make(map[uint64]string, len(r.Values))
	for _, row := range r.Values {
		m[uint64(intOf(&row[0]))] = string(row[1].AsString())
	}
	return m, nil
}

// validUTF8 reports a column value that is not valid UTF-8 after
// decoding (a server bug or a charset weir misread), naming the column.
func (c *Column) validUTF8(s string) error {
	if utf8.ValidString(s) {
		return nil
	}
	return fmt.Errorf("column %s (%s, character set %s): value is not valid UTF-8 after decoding: %q", c.Name, c.Type, c.Charset, s)
}

package jsonw

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// plain[c] is true for the ASCII bytes written as themselves.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendString appends s to b as a quoted JSON string (see the package
// comment for the escaping) and returns the extended buffer.
func AppendString[S ~string | ~[]byte](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, n := decodeRune(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += n
			continue
		}
		i += n
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// decodeRune is utf8.DecodeRune for either form of s, without
// converting a []byte to a string (a copy per rune); s[0] is not ASCII.
// An invalid or short sequence is (utf8.RuneError, 1), as in utf8.
func decodeRune[S ~string | ~[]byte](s S) (rune, int) {
	const cont = 0x80 // continuation bytes are cont..cont+0x3f
	c0 := s[0]
	ok := func(i int, lo, hi byte) bool { return i < len(s) && s[i] >= lo && s[i] <= hi }
	switch {
	case c0 >= 0xC2 && c0 < 0xE0:
		if ok(1, cont, 0xBF) {
			return rune(c0&0x1F)<<6 | rune(s[1]&0x3F), 2
		}
	case c0 >= 0xE0 && c0 < 0xF0:
		lo, hi := byte(cont), byte(0xBF)
		switch c0 {
		case 0xE0:
			lo = 0xA0 // no overlong forms
		case 0xED:
			hi = 0x9F // no surrogates
		}
		if ok(1, lo, hi) && ok(2, cont, 0xBF) {
			return rune(c0&0x0F)<<12 | rune(s[1]&0x3F)<<6 | rune(s[2]&0x3F), 3
		}
	case c0 >= 0xF0 && c0 < 0xF5:
		lo, hi := byte(cont), byte(0xBF)
		switch c0 {
		case 0xF0:
			lo = 0x90 // no overlong forms
		case 0xF4:
			hi = 0x8F // nothing above U+10FFFF
		}
		if ok(1, lo, hi) && ok(2, cont, 0xBF) && ok(3, cont, 0xBF) {
			return rune(c0&0x07)<<18 | rune(s[1]&0x3F)<<12 | rune(s[2]&0x3F)<<6 | rune(s[3]&0x3F), 4
		}
	}
	return utf8.RuneError, 1
}

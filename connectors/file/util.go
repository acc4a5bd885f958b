package file

import "unicode/utf8"

func decodeRune(b []byte) (rune, int) { return utf8.DecodeRune(b) }

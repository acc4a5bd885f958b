package script

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Args are a command's key=value arguments.
type Args map[string]string

// ParseArgs parses fields of the form key=value (a field without "=" is
// a key with an empty value).
func ParseArgs(fields []string) Args {
	a := Args{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		a[k] = v
	}
	return a
}

// Int is the integer argument k, def when absent; a value that is not
// an integer is a bad script: it panics naming the argument.
func (a Args) Int(k string, def int64) int64 {
	v, ok := a[k]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("argument %s=%q: %v", k, v, err))
	}
	return n
}

// Ms is the argument k in milliseconds, def when absent.
func (a Args) Ms(k string, def time.Duration) time.Duration {
	return time.Duration(a.Int(k, def.Milliseconds())) * time.Millisecond
}

// List is the comma-separated argument k; nil when absent or empty.
func (a Args) List(k string) []string {
	if a[k] == "" {
		return nil
	}
	return strings.Split(a[k], ",")
}

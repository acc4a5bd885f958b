package testkit

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// FreeAddr is a 127.0.0.1 address whose port is free right now, for a
// process that must listen on the same address after a restart (or whose
// address other processes need before it starts). Another process can take
// the port before the one it is for binds it: a first start retries on
// another when WaitListening says ErrPortTaken.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// ErrPortTaken is WaitListening's error when the process could not bind an
// address because another process had taken its port.
var ErrPortTaken = errors.New("a port picked free was taken by another process before it was bound")

// WaitListening waits up to timeout until every one of addrs accepts TCP
// connections. It returns ErrPortTaken as soon as the process's log at
// logPath says "address already in use".
func WaitListening(timeout time.Duration, logPath string, addrs ...string) error {
	return Poll(timeout, func() error {
		if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "address already in use") {
			return Stop(ErrPortTaken)
		}
		for _, addr := range addrs {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return err
			}
			c.Close()
		}
		return nil
	})
}

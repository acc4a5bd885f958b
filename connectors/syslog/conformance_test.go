package syslog_test

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"weir/connectors"
	"weir/connectors/conformance"
	"weir/connectors/syslog"
)

// The syslog kind over TCP (LF framing): each Write is one connection
// sending an RFC 5424 message "id=N" per id; the large input is one long
// message.
func TestConformance(t *testing.T) {
	t.Parallel()
	conformance.TestSource(t, conformance.SourceDef{
		Kind: "syslog",
		Push: true,
		New: func(t *testing.T, env *conformance.Env, name string) *conformance.SourceCase {
			var srv *syslog.Server
			send := func(msgs ...string) {
				c, err := net.Dial("tcp", srv.TCPAddr().String())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				var b strings.Builder
				for _, m := range msgs {
					fmt.Fprintf(&b, "<13>1 2026-12-01T00:00:00Z host app - - - %s\n", m)
				}
				if _, err := c.Write([]byte(b.String())); err != nil {
					t.Fatal(err)
				}
			}
			return &conformance.SourceCase{
				Config: map[string]any{"topic": name, "tcp_address": "127.0.0.1:0", "udp_address": "off", "encoding": "json",
					"max_message_bytes": "1MiB", "linger": "1ms"},
				Topic:  name,
				Opened: func(src connectors.Source) { srv = src.(*syslog.Source).Server() },
				Write: func(ids ...int) {
					var msgs []string
					for _, id := range ids {
						msgs = append(msgs, fmt.Sprintf("id=%d", id))
					}
					send(msgs...)
				},
				WriteLarge: func(id, size int) { send(fmt.Sprintf("id=%d %s", id, strings.Repeat("x", size))) },
				ID:         conformance.MessageID,
			}
		},
		BadConfigs: []conformance.BadConfig{
			{Name: "avro without a registry", Setting: "schema_registry", Change: func(c map[string]any) { c["encoding"] = "avro" }},
			{Name: "both listeners off", Setting: "tcp_address", Change: func(c map[string]any) { c["tcp_address"] = "off" }},
			{Name: "invalid address", Setting: "tcp_address", Change: func(c map[string]any) { c["tcp_address"] = "127.0.0.1:99999" }},
		},
	})
}

package kafkasink_test

import (
	"fmt"
	"strings"
	"testing"

	"weir/connectors/conformance"
)

// The destination refuses records over 8 KiB: the bad record is one.
func TestConformance(t *testing.T) {
	conformance.TestSink(t, conformance.SinkDef{
		Kind: "kafka",
		New: func(t *testing.T, env *conformance.Env, name string) *conformance.SinkCase {
			out := name + "-out"
			limit := fmt.Sprint(8 << 10)
			env.Broker.CreateTopic(out, 1, map[string]*string{"max.message.bytes": &limit})
			return &conformance.SinkCase{
				Config: map[string]any{"topic": out, "brokers": []any{env.Broker.Addr}, "linger": "1ms"},
				Delivered: func() ([]int, error) {
					rs, err := env.ReadAll(out)
					return conformance.IDsOfKeys(rs), err
				},
				Bad: []byte(`{"id":0,"pad":"` + strings.Repeat("x", 16<<10) + `"}`),
			}
		},
		BadConfigs: []conformance.BadConfig{{
			Name: "no brokers", Setting: "brokers",
			Change: func(c map[string]any) { c["brokers"] = []any{} },
		}},
	})
}

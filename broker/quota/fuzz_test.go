package quota

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"weir/broker/metadata"
)

// FuzzParseOverrides: max.connections.per.ip.overrides never panics; what
// it accepts has counts >= 0 and parses back to itself.
func FuzzParseOverrides(f *testing.F) {
	for _, s := range []string{"", "127.0.0.1:2", "[::1]:3, h.example:0", "a:b", ":1", "x:-1,,y:2", "::1:5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		m, err := ParseOverrides(v)
		if err != nil {
			if !strings.Contains(err.Error(), "max.connections.per.ip.overrides") {
				t.Fatalf("error does not name the setting: %v", err)
			}
			return
		}
		var parts []string
		for h, n := range m {
			if n < 0 {
				t.Fatalf("%q: count %d", v, n)
			}
			parts = append(parts, fmt.Sprintf("[%s]:%d", h, n))
		}
		back, err := ParseOverrides(strings.Join(parts, ","))
		if err != nil || len(back) != len(m) {
			t.Fatalf("%q → %v does not parse back: %v %v", v, m, back, err)
		}
	})
}

// FuzzAlterEntry: an AlterClientQuotas entry of any types, names, key and
// value is either refused with INVALID_REQUEST or is an entity that
// round-trips and a positive, finite value.
func FuzzAlterEntry(f *testing.F) {
	f.Add("client-id", "x", false, "user", "", true, "producer_byte_rate", 1048576.0)
	f.Add("user", "a", false, "user", "b", false, "request_percentage", 0.5)
	f.Add("ip", "1.2.3.4", false, "", "", false, "connection_creation_rate", 1.0)
	f.Fuzz(func(t *testing.T, t1, n1 string, d1 bool, t2, n2 string, d2 bool, key string, value float64) {
		var parts []metadata.QuotaEntityPart
		for _, p := range []struct {
			typ, name string
			def       bool
		}{{t1, n1, d1}, {t2, n2, d2}} {
			if p.typ == "" {
				continue
			}
			part := metadata.QuotaEntityPart{Type: p.typ}
			if !p.def {
				name := p.name
				part.Name = &name
			}
			parts = append(parts, part)
		}
		e, qerr := EntityOf(parts)
		if qerr != nil {
			if qerr.Code != "INVALID_REQUEST" || qerr.Msg == "" {
				t.Fatalf("%v: %+v", parts, qerr)
			}
			return
		}
		if back, err := EntityOf(e.Parts()); err != nil || back != e {
			t.Fatalf("%v: %v does not round-trip: %v %v", parts, e, back, err)
		}
		if err := CheckValue(key, value); err == nil && (!(value > 0) || math.IsInf(value, 0)) {
			t.Fatalf("%s=%v accepted", key, value)
		}
		_, _, _ = Resolve(map[Entity]float64{e: 1}, n1, n2)
	})
}

package topicconfig

import (
	"errors"
	"strings"
	"testing"
)

func TestQuotaAndConnectionSettings(t *testing.T) {
	b, err := NewBroker(map[string]string{"quota.window.num": "3", "quota.window.size.seconds": "2",
		"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:5,[::1]:6"})
	if err != nil {
		t.Fatal(err)
	}
	if w := b.QuotaWindow(); w.Samples != 3 || w.SizeMs != 2000 {
		t.Fatalf("window %+v", w)
	}
	c, err := b.ConnLimits()
	if err != nil || c.MaxPerIP != 0 || c.Overrides["127.0.0.1"] != 5 || c.Overrides["::1"] != 6 || c.Max != 2147483647 {
		t.Fatalf("%+v %v", c, err)
	}
	if d, _ := Defaults().ConnLimits(); d.MaxPerIP != 2147483647 || len(d.Overrides) != 0 {
		t.Fatalf("defaults %+v", d)
	}
	for _, bad := range []map[string]string{
		{"max.connections.per.ip.overrides": "127.0.0.1"},
		{"quota.window.num": "0"},
		{"max.connections.per.ip": "-1"},
	} {
		if _, err := NewBroker(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	zero, err := NewBroker(map[string]string{"max.connections.per.ip": "0"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zero.ConnLimits(); !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "max.connections.per.ip.overrides") {
		t.Fatalf("max.connections.per.ip=0 without overrides: %v", err)
	}
}

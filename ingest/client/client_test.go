package client

import (
	"errors"
	"slices"
	"testing"
)

func TestSplitBrokers(t *testing.T) {
	got, err := SplitBrokers(" a:1, b:2 ,,c:3")
	if err != nil || !slices.Equal(got, []string{"a:1", "b:2", "c:3"}) {
		t.Fatalf("SplitBrokers = %v, %v", got, err)
	}
	if _, err := SplitBrokers(" , "); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty list: err = %v, want ErrInvalid", err)
	}
}

func TestBrokersDefault(t *testing.T) {
	t.Setenv(BrokersEnv, "")
	if BrokersDefault() != DefaultBrokers {
		t.Fatalf("default = %q", BrokersDefault())
	}
	t.Setenv(BrokersEnv, "h1:9092,h2:9092")
	if BrokersDefault() != "h1:9092,h2:9092" {
		t.Fatalf("env default = %q", BrokersDefault())
	}
}

func TestParseAcks(t *testing.T) {
	for in, want := range map[string]Acks{"0": 0, "1": 1, "all": -1, "-1": -1, "ALL": -1} {
		got, err := ParseAcks(in)
		if err != nil || got != want {
			t.Errorf("ParseAcks(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseAcks("2"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseAcks(2) err = %v", err)
	}
	if Acks(-1).String() != "all" || Acks(1).String() != "1" {
		t.Error("Acks.String")
	}
}

func TestParseCompression(t *testing.T) {
	for _, s := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		if _, err := ParseCompression(s); err != nil {
			t.Errorf("ParseCompression(%q): %v", s, err)
		}
	}
	if _, err := ParseCompression("brotli"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseCompression(brotli) err = %v", err)
	}
}

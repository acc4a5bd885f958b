package node

import (
	"slices"
	"testing"
)

// The partition log directories: --log-dir (a comma-separated list, as
// Kafka's log.dirs), else the log.dirs broker config, else the data
// directory; empty and repeated entries are refused.
func TestConfigLogDirs(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want []string
	}{
		{Config{DataDir: "/d"}, []string{"/d"}},
		{Config{DataDir: "/d", LogDir: "/l"}, []string{"/l"}},
		{Config{DataDir: "/d", LogDir: " /l1 , /l2/ "}, []string{"/l1", "/l2"}},
		{Config{DataDir: "/d", BrokerConfigs: map[string]string{"log.dirs": "/x,/y"}}, []string{"/x", "/y"}},
		{Config{DataDir: "/d", LogDir: "/l", BrokerConfigs: map[string]string{"log.dirs": "/x,/y"}}, []string{"/l"}},
	} {
		got, err := c.cfg.logDirs()
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%+v: %v %v, want %v", c.cfg, got, err, c.want)
		}
	}
	for _, bad := range []string{"/a,,/b", "/a,/a/", "/a,"} {
		if got, err := (Config{DataDir: "/d", LogDir: bad}).logDirs(); err == nil {
			t.Errorf("%q accepted: %v", bad, got)
		}
	}
}

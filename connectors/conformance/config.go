package conformance

import (
	"context"
	"strings"
	"testing"

	"weir/connectors"
)

// badConfigs are the generic bad configs of a kind, derived from its
// spec and a good config: each required setting left out, an unknown
// setting, a value of the wrong type and one outside the choices.
func badConfigs(k *connectors.Kind, good map[string]any) []BadConfig {
	out := []BadConfig{{Name: "unknown setting", Setting: "no_such_setting",
		Change: func(c map[string]any) { c["no_such_setting"] = "x" }}}
	for _, f := range k.Spec.Fields {
		name := f.Name
		if f.Required {
			out = append(out, BadConfig{Name: "missing " + name, Setting: name, Change: func(c map[string]any) { delete(c, name) }})
		}
		switch {
		case len(f.Enum) > 0:
			out = append(out, BadConfig{Name: name + " outside its choices", Setting: name, Change: func(c map[string]any) { c[name] = "no-such-choice" }})
		case f.Type == connectors.Int || f.Type == connectors.Bool || f.Type == connectors.Duration || f.Type == connectors.Size:
			out = append(out, BadConfig{Name: name + " of the wrong type", Setting: name, Change: func(c map[string]any) { c[name] = "not-a-" + f.Type.String() }})
		}
	}
	return out
}

// checkBadConfig builds and runs a connector from raw (through decode,
// construction and Open) and fails t unless that fails naming setting.
func checkBadConfig(t *testing.T, env *Env, k *connectors.Kind, raw map[string]any, setting string, topic string) {
	t.Helper()
	err := runBriefly(t, env, k, raw, topic)
	if err == nil {
		t.Fatalf("accepted; want an error naming %q", setting)
	}
	if !strings.Contains(err.Error(), setting) {
		t.Fatalf("error %q does not name the setting %q", err, setting)
	}
	t.Logf("error: %v", err)
}

// runBriefly returns the first error of decoding raw, building the
// connector, its Open or (for a source) its first Poll: a connector
// still running after that is stopped and nil returned.
func runBriefly(t *testing.T, env *Env, k *connectors.Kind, raw map[string]any, topic string) error {
	cfg, err := k.Spec.Decode(raw)
	if err != nil {
		return err
	}
	name := connectorName(t)
	opened, polled := make(chan error, 1), make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	if k.IsSource() {
		src, err := k.NewSource(name, cfg)
		if err != nil {
			return err
		}
		w := &source{Source: src, opened: opened, polled: polled}
		go func() {
			errc <- env.rt.RunSource(ctx, name, w, connectors.SourceOptions{Topic: topic})
		}()
	} else {
		sk, err := k.NewSink(name, cfg)
		if err != nil {
			return err
		}
		w := &sink{Sink: sk, opened: opened}
		go func() {
			errc <- env.rt.RunSink(ctx, name, w, connectors.SinkOptions{Topics: []string{topic}})
		}()
	}
	select {
	case err := <-errc:
		return err
	case err := <-opened:
		if err != nil {
			<-errc
			return err
		}
	}
	if k.IsSource() {
		select {
		case err := <-errc:
			return err
		case err := <-polled:
			if err != nil {
				cancel()
				<-errc
				return err
			}
		}
	}
	cancel()
	<-errc
	return nil
}

package main

import (
	"fmt"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"weir/console"
	"weir/internal/kafkaclient"
)

// consoleFlags are the web console's flags (weir broker, weir run).
type consoleFlags struct {
	on           bool
	readOnly     bool
	clientConfig string
}

// addConsoleFlags adds --console, --console-read-only and
// --console-client-config to fl.
func addConsoleFlags(fl *pflag.FlagSet, f *consoleFlags) {
	fl.BoolVar(&f.on, "console", true, "serve the web console under /console/ on the admin listener (behind its TLS and basic auth)")
	fl.BoolVar(&f.readOnly, "console-read-only", false, "the web console hides and refuses every action that changes the cluster")
	fl.StringVar(&f.clientConfig, "console-client-config", "", "Kafka client properties file of the console's client (bootstrap.servers, security.protocol, sasl.*, ssl.*; schema.registry.url, schema.registry.ssl.*, basic.auth.user.info for the registry); it replaces the default: weir run's pipeline client settings (broker block, client_config), weir broker's PLAINTEXT listener")
}

// startConsole builds the console over the cluster kopts reaches (seed
// brokers and security: weir run's pipeline client, weir broker's own
// listener) and the registry reg, unless --console-client-config
// replaces both, and mounts it on m. It returns nil when the console is
// off.
func startConsole(f *consoleFlags, m console.Mux, kopts kafkaclient.Options, reg kafkaclient.Registry, pipelines console.Pipelines, lg *zap.Logger) (*console.Console, error) {
	if !f.on || m == nil {
		return nil, nil
	}
	kopts.ClientID = "weir-console"
	if f.clientConfig != "" {
		props, err := kafkaclient.ReadPropertiesFile(f.clientConfig)
		if err != nil {
			return nil, fmt.Errorf("--console-client-config: %w", err)
		}
		st, unknown, err := kafkaclient.ParseProperties(props)
		if err != nil {
			return nil, fmt.Errorf("--console-client-config %s: %w", f.clientConfig, err)
		}
		if len(unknown) > 0 {
			lg.Warn("console client properties weir does not use", zap.Strings("names", unknown))
		}
		kopts = st.Options(kopts) // its security replaces the default's
		url := reg.URLs
		reg = st.Registry
		if len(reg.URLs) == 0 {
			reg.URLs = url
		}
	}
	cfg := console.Config{Kafka: kopts, ReadOnly: f.readOnly, Pipelines: pipelines, Logger: lg.Named("console")}
	if len(reg.URLs) > 0 {
		cfg.Registry = reg.SRClient()
	}
	c, err := console.New(cfg)
	if err != nil {
		return nil, err
	}
	c.Mount(m)
	return c, nil
}

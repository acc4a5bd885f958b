package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"weir/broker/httpsec"
	"weir/broker/metadata"
	"weir/internal/kafkaclient"
	"weir/schemas/registry"
)

// DefaultRegistryAddr is the schema registry's listen address (Confluent's
// port).
const DefaultRegistryAddr = ":8081"

// registrySettings reads the registry's address and Confluent-named
// settings (nil: no registry). listeners in RegistryConfigs replaces
// RegistryAddr unless the user chose that too.
func registrySettings(cfg Config) (*httpsec.Settings, error) {
	addr := strings.TrimSpace(cfg.RegistryAddr)
	_, hasListeners := cfg.RegistryConfigs[httpsec.RegistryListeners]
	if strings.EqualFold(addr, "off") {
		return nil, nil
	}
	if hasListeners && cfg.RegistryAddrIsDefault {
		addr = ""
	}
	if addr == "" && !hasListeners {
		if len(cfg.RegistryConfigs) > 0 {
			return nil, errors.New("schema registry settings are given but the registry is off: set --registry-addr or listeners")
		}
		return nil, nil
	}
	return httpsec.ParseRegistry(addr, cfg.RegistryConfigs)
}

// ServeRegistry serves the schema registry of the broker process on addr
// (host:port, plain HTTP), storing schemas in the _schemas topic of the
// broker at kafkaAddr. See ServeRegistrySecure.
func ServeRegistry(lg *zap.Logger, addr, kafkaAddr string, meta metadata.Store, explicit bool) (stop func(context.Context) error, boundAddr string, err error) {
	if a := strings.TrimSpace(addr); a == "" || strings.EqualFold(a, "off") {
		return func(context.Context) error { return nil }, "", nil
	}
	st, err := httpsec.ParseRegistry(addr, nil)
	if err != nil {
		return nil, "", err
	}
	return ServeRegistrySecure(lg, st, kafkaAddr, meta, explicit)
}

// ServeRegistrySecure serves the schema registry of the broker process
// as st says (address, TLS, authentication; nil: none), storing schemas
// in the _schemas topic of the broker at kafkaAddr. The listener is bound
// now (so address errors surface at startup); the registry then reads
// _schemas in the background and answers 503 until it has. meta creates
// _schemas compacted when the broker does not serve CreateTopics (nil:
// rely on auto-creation). explicit says the address was given by the
// user: when it was not and the default port is taken, the broker runs
// without a registry (with a warning) instead of failing.
//
// stop shuts the HTTP server down and closes the registry; call it before
// the Kafka server stops. boundAddr is "" when the registry is disabled.
func ServeRegistrySecure(lg *zap.Logger, st *httpsec.Settings, kafkaAddr string, meta metadata.Store, explicit bool) (stop func(context.Context) error, boundAddr string, err error) {
	noop := func(context.Context) error { return nil }
	if st == nil {
		return noop, "", nil
	}
	sec, err := httpsec.New(st, lg)
	if err != nil {
		return nil, "", err
	}
	ln, err := sec.Listen("")
	if err != nil {
		sec.Close()
		if !explicit && errors.Is(err, syscall.EADDRINUSE) {
			lg.Warn("schema registry disabled: its default address is in use (set --registry-addr)", zap.String("addr", st.Addr), zap.Error(err))
			return noop, "", nil
		}
		return nil, "", fmt.Errorf("schema registry listener %s: %w", st.Addr, err)
	}
	var handler atomic.Pointer[http.Handler]
	starting := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", registry.ContentType)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error_code":50003,"message":"schema registry is starting: reading the _schemas topic"}` + "\n"))
	})
	srv := &http.Server{
		Handler: sec.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if h := handler.Load(); h != nil {
				(*h).ServeHTTP(w, r)
				return
			}
			starting(w, r)
		}), httpsec.Options{ContentType: registry.ContentType, IsWrite: registry.IsWrite}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          zap.NewStdLog(lg.Named("http")),
	}
	go func() { _ = srv.Serve(ln) }()

	ctx, cancel := context.WithCancel(context.Background())
	regc := make(chan *registry.Registry, 1)
	go func() {
		defer close(regc)
		var create func(context.Context, string, map[string]string) error
		if meta != nil {
			create = func(ctx context.Context, topic string, configs map[string]string) error {
				_, err := meta.CreateTopic(ctx, metadata.TopicSpec{Name: topic, Partitions: 1, ReplicationFactor: 1, Configs: configs})
				if errors.Is(err, metadata.ErrTopicExists) {
					return nil
				}
				return err
			}
		}
		for attempt := 0; ; attempt++ {
			reg, err := openRegistry(ctx, lg, kafkaAddr, create)
			if err == nil {
				h := reg.Handler()
				handler.Store(&h)
				lg.Info("schema registry ready", zap.String("addr", ln.Addr().String()))
				regc <- reg
				return
			}
			if ctx.Err() != nil {
				return
			}
			lg.Warn("schema registry not ready, retrying", zap.Int("attempt", attempt+1), zap.Error(err))
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
	lg.Info("schema registry listening", zap.String("addr", ln.Addr().String()), zap.String("scheme", st.Scheme()),
		zap.Bool("basic_auth", st.Auth != nil))
	stop = func(sctx context.Context) error {
		cancel()
		err := srv.Shutdown(sctx)
		sec.Close()
		if reg, ok := <-regc; ok && reg != nil {
			if cerr := reg.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}
		return err
	}
	return stop, ln.Addr().String(), nil
}

func openRegistry(ctx context.Context, lg *zap.Logger, kafkaAddr string, create func(context.Context, string, map[string]string) error) (*registry.Registry, error) {
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	kl, err := registry.OpenKafka(octx, registry.KafkaConfig{Client: kafkaclient.Options{Brokers: []string{kafkaAddr}}, CreateTopic: create, Logger: lg})
	if err != nil {
		return nil, err
	}
	reg, err := registry.New(octx, registry.Config{Log: kl, Logger: lg})
	if err != nil {
		return nil, err // New closed kl
	}
	return reg, nil
}

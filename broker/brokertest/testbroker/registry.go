package testbroker

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"

	"weir/internal/kafkaclient"
	"weir/schemas/registry"
)

// Registry starts weir's schema registry over b's _schemas topic, served
// over HTTP on 127.0.0.1, and returns its URL. It stops at cleanup.
func (b *Broker) Registry(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kl, err := registry.OpenKafka(ctx, registry.KafkaConfig{Client: kafkaclient.Options{Brokers: []string{b.Addr}}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(ctx, registry.Config{Log: kl, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reg.Handler())
	t.Cleanup(func() {
		srv.Close()
		reg.Close()
	})
	return srv.URL
}

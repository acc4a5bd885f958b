package node

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"weir/broker/acl"
	"weir/broker/kafka"
	"weir/broker/listener"
	"weir/broker/sasl"
	"weir/broker/tlsconf"
)

// DefaultTLSReloadInterval is how often the key and trust store files of
// SSL listeners are checked for changes.
const DefaultTLSReloadInterval = 10 * time.Second

// listenerSetup is the node's listeners, worked out from the broker
// configs (Kafka's listeners, advertised.listeners, ...) or, without
// listeners, from KafkaAddr and AdvertisedAddr (one PLAINTEXT listener).
type listenerSetup struct {
	cfg        *listener.Config
	kafka      []kafka.Listener
	tls        []*tlsconf.Server
	controller string // the controller listener's address ("": none)
	// controllerLn is the controller listener already bound by the
	// caller (Config.BoundListeners), if any.
	controllerLn net.Listener
	// controllerTLS and interBrokerTLS are the TLS sides of an SSL
	// controller listener and an SSL inter-broker listener (nil:
	// plaintext): the Raft and controller RPC port, and follower fetches.
	controllerTLS, interBrokerTLS *tlsconf.Server
}

func setupListeners(cfg Config, lg *zap.Logger, scram sasl.ScramStore) (*listenerSetup, error) {
	configs := map[string]string{}
	for k, v := range cfg.BrokerConfigs {
		configs[k] = v
	}
	if _, ok := configs[listener.Listeners]; ok {
		if cfg.KafkaAddr != "" || cfg.AdvertisedAddr != "" {
			return nil, fmt.Errorf("%s is set: the Kafka address and advertised address (--kafka-addr, --advertised-kafka-addr) must not be set too", listener.Listeners)
		}
	} else {
		addr := cfg.KafkaAddr
		if cfg.KafkaListener != nil {
			addr = cfg.KafkaListener.Addr().String()
		}
		if addr == "" {
			addr = ":9092"
		}
		configs[listener.Listeners] = "PLAINTEXT://" + addr
		if _, ok := configs[listener.AdvertisedListeners]; !ok && cfg.AdvertisedAddr != "" {
			configs[listener.AdvertisedListeners] = "PLAINTEXT://" + cfg.AdvertisedAddr
		}
	}
	lc, err := listener.Parse(configs, listener.Options{Cluster: cfg.Controller != nil})
	if err != nil {
		return nil, err
	}
	st := &listenerSetup{cfg: lc}
	fail := func(err error) (*listenerSetup, error) {
		st.close()
		return nil, err
	}
	byName := map[string]*tlsconf.Server{}
	newTLS := func(e listener.Endpoint) (*tlsconf.Server, error) {
		tc, err := tlsconf.Parse(e.Name, tlsconf.ListenerSettings(configs, e.Name), configs)
		if err != nil {
			return nil, err
		}
		srv, err := tlsconf.NewServer(tc, lg.Named("tls"))
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", e.Name, err)
		}
		st.tls = append(st.tls, srv)
		byName[e.Name] = srv
		return srv, nil
	}
	audit := sasl.NewAudit(lg, 0, 0)
	for _, e := range lc.Listeners {
		kl := kafka.Listener{Name: e.Name, Protocol: string(e.Protocol), Addr: e.Addr()}
		if e.Protocol.SASL() {
			if kl.SASL, err = saslServer(e.Name, configs, scram, audit); err != nil {
				return fail(err)
			}
		}
		if adv, ok := lc.AdvertisedFor(e.Name); ok {
			kl.Advertised = adv.Addr()
		} else {
			kl.NoAdvertise = true
		}
		if e.Protocol.TLS() {
			srv, err := newTLS(e)
			if err != nil {
				return fail(err)
			}
			kl.TLS = srv
		}
		kl.Listener = cfg.BoundListeners[e.Name]
		st.kafka = append(st.kafka, kl)
	}
	if cfg.KafkaListener != nil {
		st.kafka[0].Listener = cfg.KafkaListener
	}
	if cfg.Controller != nil {
		// Replication between brokers goes to the leader's inter-broker
		// listener, with that listener's ssl.* settings on both sides
		// (as Kafka's inter-broker clients use them).
		ib, _ := lc.Listener(lc.InterBroker)
		if ib.Protocol.SASL() {
			return fail(fmt.Errorf("%s: the inter-broker listener %s is %s: replication between brokers over SASL is not supported; use an SSL listener (mutual TLS) or PLAINTEXT",
				listener.InterBrokerListenerName, lc.InterBroker, ib.Protocol))
		}
		st.interBrokerTLS = byName[ib.Name]
		if len(lc.Controller) > 0 {
			c := lc.Controller[0]
			switch {
			case c.Protocol.SASL():
				return fail(fmt.Errorf("%s: controller listener %s is %s: the controller quorum over SASL is not supported; use SSL (mutual TLS) or PLAINTEXT", listener.ControllerListenerNames, c.Name, c.Protocol))
			case c.Protocol.TLS():
				srv, err := newTLS(c)
				if err != nil {
					return fail(err)
				}
				st.controllerTLS = srv
			}
			st.controller = c.Addr()
			st.controllerLn = cfg.BoundListeners[c.Name]
		}
		for _, srv := range []*tlsconf.Server{st.interBrokerTLS, st.controllerTLS} {
			if srv != nil && srv.Config().ClientAuth != tlsconf.ClientAuthRequired {
				lg.Warn("a broker-to-broker listener is SSL without ssl.client.auth=required: any peer that trusts its certificate may connect unauthenticated; set ssl.client.auth=required (or listener.name.<name>.ssl.client.auth) for mutual TLS",
					zap.String("listener", srv.Config().Listener), zap.String("ssl.client.auth", string(srv.Config().ClientAuth)))
			}
		}
	}
	return st, nil
}

// watch starts the reloading of key and trust store files.
func (st *listenerSetup) watch(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = DefaultTLSReloadInterval
	}
	for _, s := range st.tls {
		s.Watch(ctx, interval)
	}
}

func (st *listenerSetup) close() {
	if st == nil {
		return
	}
	for _, s := range st.tls {
		s.Close()
	}
}

// describe lists the listeners for the start-up log.
func (st *listenerSetup) describe() string {
	var parts []string
	for _, l := range st.kafka {
		parts = append(parts, l.Name+"("+l.Protocol+")")
	}
	return strings.Join(parts, ",")
}

// controllerAuthorize is who may use an SSL controller listener when an
// authorizer is configured: the super.users, as Kafka's KRaft
// StandardAuthorizer requires of brokers and controllers (the ACLs load
// from the very metadata the quorum serves, so they cannot admit a voter).
// Without an authorizer, every certificate the trust store accepts.
func controllerAuthorize(authz *acl.Config) func(string) bool {
	if authz == nil {
		return nil
	}
	return func(principal string) bool { return slices.Contains(authz.SuperUsers, principal) }
}

// controllerName is the controller listener's name ("": the default,
// CONTROLLER).
func (st *listenerSetup) controllerName() string {
	if st.cfg == nil || len(st.cfg.Controller) == 0 {
		return ""
	}
	return st.cfg.Controller[0].Name
}

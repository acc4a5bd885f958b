package listener

import (
	"strings"
	"testing"
)

func TestParseDefaults(t *testing.T) {
	c, err := Parse(map[string]string{Listeners: "plaintext://127.0.0.1:9092, SSL://:9094"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Listeners) != 2 || c.Listeners[0] != (Endpoint{"PLAINTEXT", Plaintext, "127.0.0.1", 9092}) || c.Listeners[1] != (Endpoint{"SSL", SSL, "", 9094}) {
		t.Fatalf("listeners %+v", c.Listeners)
	}
	if c.InterBroker != "PLAINTEXT" || len(c.Advertised) != 2 {
		t.Fatalf("inter-broker %q, advertised %+v", c.InterBroker, c.Advertised)
	}
	if c.Listeners[1].String() != "SSL://:9094" || c.Listeners[0].Addr() != "127.0.0.1:9092" {
		t.Fatalf("String %q Addr %q", c.Listeners[1], c.Listeners[0].Addr())
	}
}

func TestParseNamedListeners(t *testing.T) {
	c, err := Parse(map[string]string{
		Listeners:                   "INTERNAL://127.0.0.1:0,EXTERNAL://[::1]:0,CONTROLLER://127.0.0.1:9093",
		AdvertisedListeners:         "INTERNAL://broker1:9092,EXTERNAL://broker1.example:9094",
		ListenerSecurityProtocolMap: "INTERNAL:PLAINTEXT,EXTERNAL:SSL,CONTROLLER:PLAINTEXT",
		InterBrokerListenerName:     "internal",
		ControllerListenerNames:     "CONTROLLER",
	}, Options{Cluster: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Listeners) != 2 || len(c.Controller) != 1 || c.Controller[0].Port != 9093 || c.InterBroker != "INTERNAL" {
		t.Fatalf("%+v", c)
	}
	if e, ok := c.AdvertisedFor("EXTERNAL"); !ok || e.Host != "broker1.example" || e.Protocol != SSL {
		t.Fatalf("advertised EXTERNAL %+v", e)
	}
	if e, _ := c.Listener("EXTERNAL"); e.Host != "::1" || e.String() != "EXTERNAL://[::1]:0" {
		t.Fatalf("EXTERNAL %+v %s", e, e)
	}
}

// The errors of Kafka's KafkaConfigTest and validateValues, each naming
// the setting.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  map[string]string
		opts Options
		want string
	}{
		{map[string]string{}, Options{}, "listeners: no listener"},
		{map[string]string{Listeners: "PLAINTEXT://localhost:9091,SSL://localhost:9091"}, Options{}, "listeners: each listener must have a different port"},
		{map[string]string{Listeners: "PLAINTEXT://localhost:9091,PLAINTEXT://localhost:9092"}, Options{}, "each listener must have a different name"},
		{map[string]string{Listeners: "PLAINTEXT://127.0.0.1:9091,SSL://127.0.0.2:9091"}, Options{}, "unless exactly one listener has an IPv4 address"},
		{map[string]string{Listeners: "TRACE://localhost:9091,SSL://localhost:9093"}, Options{}, "no security protocol defined for listener TRACE"},
		{map[string]string{Listeners: "TRACE://localhost:9091,SSL://localhost:9093", AdvertisedListeners: "PLAINTEXT://localhost:9092",
			ListenerSecurityProtocolMap: "PLAINTEXT:PLAINTEXT,TRACE:PLAINTEXT,SSL:SSL"}, Options{},
			"advertised.listeners listener names must be equal to or a subset of the ones defined in listeners"},
		{map[string]string{Listeners: "SSL://:9094"}, Options{}, "inter.broker.listener.name must be a listener name defined in advertised.listeners"},
		{map[string]string{Listeners: "PLAINTEXT://:9092", InterBrokerListenerName: "PLAINTEXT", SecurityInterBrokerProtocol: "PLAINTEXT"}, Options{},
			"only one of inter.broker.listener.name and security.inter.broker.protocol"},
		{map[string]string{Listeners: "PLAINTEXT://:9092", InterBrokerListenerName: "NOPE"}, Options{}, "inter.broker.listener.name: listener with name NOPE not found in listener.security.protocol.map"},
		{map[string]string{Listeners: "PLAINTEXT://:9092", SecurityInterBrokerProtocol: "TLS"}, Options{}, "security.inter.broker.protocol: invalid security protocol"},
		{map[string]string{Listeners: "PLAINTEXT://:9092", ListenerSecurityProtocolMap: "PLAINTEXT:QUIC"}, Options{}, "listener.security.protocol.map: invalid security protocol \"QUIC\""},
		{map[string]string{Listeners: "PLAINTEXT://:9092", ListenerSecurityProtocolMap: "PLAINTEXT"}, Options{}, "listener.security.protocol.map: \"PLAINTEXT\": want"},
		{map[string]string{Listeners: "PLAINTEXT://:9092", AdvertisedListeners: "PLAINTEXT://0.0.0.0:9092"}, Options{}, "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0"},
		{map[string]string{Listeners: "PLAINTEXT:/:9092"}, Options{}, "listeners: unable to parse \"PLAINTEXT:/:9092\""},
		{map[string]string{Listeners: "PLAINTEXT://:99999"}, Options{}, "port 99999 out of range"},
		{map[string]string{Listeners: "PLAINTEXT://:9092,CONTROLLER://:9093", ControllerListenerNames: "CONTROLLER"}, Options{}, "this node runs no controller quorum"},
		{map[string]string{Listeners: "PLAINTEXT://:9092", ControllerListenerNames: "CONTROLLER"}, Options{Cluster: true}, "controller.listener.names must only contain values appearing in the listeners configuration"},
		{map[string]string{Listeners: "CONTROLLER://:9093", ControllerListenerNames: "CONTROLLER"}, Options{Cluster: true}, "at least one broker advertised listener; perhaps all listeners appear in controller.listener.names"},
	} {
		_, err := Parse(c.cfg, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%v) = %v; want an error containing %q", c.cfg, err, c.want)
		}
	}
}

// Advertised listeners may share a port (a load balancer), listeners on
// port 0 may too, and an IPv4 and an IPv6 listener may share one.
func TestParsePortsShared(t *testing.T) {
	for _, cfg := range []map[string]string{
		{Listeners: "HOST://localhost:9091,LB://localhost:9092", AdvertisedListeners: "HOST://localhost:9091,LB://localhost:9091",
			ListenerSecurityProtocolMap: "HOST:SASL_SSL,LB:SASL_SSL", InterBrokerListenerName: "HOST"},
		{Listeners: "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"},
		{Listeners: "PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092"},
	} {
		if _, err := Parse(cfg, Options{}); err != nil {
			t.Errorf("Parse(%v): %v", cfg, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"PLAINTEXT://:9092", "INTERNAL://[::1]:0,EXTERNAL://h:1|INTERNAL:PLAINTEXT,EXTERNAL:SSL", "A://:1,B://:1|A:SSL,B:SASL_SSL|B", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parts := strings.Split(s, "|")
		cfg := map[string]string{Listeners: parts[0]}
		if len(parts) > 1 {
			cfg[ListenerSecurityProtocolMap] = parts[1]
		}
		if len(parts) > 2 {
			cfg[InterBrokerListenerName] = parts[2]
		}
		if len(parts) > 3 {
			cfg[AdvertisedListeners] = parts[3]
		}
		c, err := Parse(cfg, Options{Cluster: len(s)%2 == 0})
		if err != nil {
			return
		}
		// What parses is consistent: the inter-broker listener is
		// advertised and a listener, every listener has a protocol.
		if _, ok := c.AdvertisedFor(c.InterBroker); !ok {
			t.Fatalf("inter-broker %s not advertised: %+v", c.InterBroker, c)
		}
		for _, e := range c.Listeners {
			if _, ok := ParseProtocol(string(e.Protocol)); !ok || e.Port < 0 || e.Port > 65535 {
				t.Fatalf("bad endpoint %+v", e)
			}
			// String round-trips through the parser.
			again, err := ParseEndpoints(Listeners, e.String(), c.Protocols, true)
			if err != nil || len(again) != 1 || again[0] != e {
				t.Fatalf("%s does not round-trip: %+v, %v", e, again, err)
			}
		}
	})
}

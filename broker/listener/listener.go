package listener

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Kafka's names of the listener settings.
const (
	Listeners                     = "listeners"
	AdvertisedListeners           = "advertised.listeners"
	ListenerSecurityProtocolMap   = "listener.security.protocol.map"
	InterBrokerListenerName       = "inter.broker.listener.name"
	SecurityInterBrokerProtocol   = "security.inter.broker.protocol"
	ControllerListenerNames       = "controller.listener.names"
	defaultInterBrokerProtocol    = Plaintext
	defaultListenerProtocolMapStr = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
)

// Protocol is a Kafka security protocol (security.protocol).
type Protocol string

// The security protocols Kafka defines.
const (
	Plaintext     Protocol = "PLAINTEXT"
	SSL           Protocol = "SSL"
	SASLPlaintext Protocol = "SASL_PLAINTEXT"
	SASLSSL       Protocol = "SASL_SSL"
)

// ParseProtocol returns the protocol named s (case-insensitive, as
// Kafka's SecurityProtocol.forName).
func ParseProtocol(s string) (Protocol, bool) {
	switch p := Protocol(strings.ToUpper(s)); p {
	case Plaintext, SSL, SASLPlaintext, SASLSSL:
		return p, true
	}
	return "", false
}

// TLS reports whether the protocol runs over TLS.
func (p Protocol) TLS() bool { return p == SSL || p == SASLSSL }

// SASL reports whether the protocol authenticates with SASL.
func (p Protocol) SASL() bool { return p == SASLPlaintext || p == SASLSSL }

// ID is the protocol's id in the Kafka protocol (SecurityProtocol.id).
func (p Protocol) ID() int16 {
	switch p {
	case SSL:
		return 1
	case SASLPlaintext:
		return 2
	case SASLSSL:
		return 3
	}
	return 0
}

// Endpoint is one listener: a name, its security protocol and an address.
// Host "" means all interfaces (listeners) or the machine's hostname
// (advertised listeners).
type Endpoint struct {
	Name     string
	Protocol Protocol
	Host     string
	Port     int
}

// Addr is host:port.
func (e Endpoint) Addr() string { return net.JoinHostPort(e.Host, strconv.Itoa(e.Port)) }

// String is NAME://host:port, the form of the listeners setting.
func (e Endpoint) String() string {
	h := e.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return e.Name + "://" + h + ":" + strconv.Itoa(e.Port)
}

// Kafka's EndpointUtils pattern.
var endpointRE = regexp.MustCompile(`^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$`)

// parseCSV is Kafka's Csv.parseCsvList: comma-separated, trimmed, empty
// entries dropped.
func parseCSV(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// ParseEndpoints parses a listeners-style list (NAME://host:port,...) with
// the protocol map; setting names the config in errors. Names are
// upper-cased, as Kafka normalises them. With distinctPorts (listeners,
// not advertised.listeners) two listeners may share a port (not 0) only
// when one is on an IPv4 and the other on an IPv6 address.
func ParseEndpoints(setting, value string, protocols map[string]Protocol, distinctPorts bool) ([]Endpoint, error) {
	var eps []Endpoint
	for _, s := range parseCSV(value) {
		m := endpointRE.FindStringSubmatch(s)
		if m == nil {
			return nil, fmt.Errorf("%s: unable to parse %q to a broker endpoint (want NAME://host:port)", setting, s)
		}
		name := strings.ToUpper(m[1])
		port, err := strconv.Atoi(m[3])
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("%s: %q: port %s out of range 0..65535", setting, s, m[3])
		}
		p, ok := protocols[name]
		if !ok {
			return nil, fmt.Errorf("%s: no security protocol defined for listener %s (set %s)", setting, name, ListenerSecurityProtocolMap)
		}
		eps = append(eps, Endpoint{Name: name, Protocol: p, Host: m[2], Port: port})
	}
	seen := map[string]bool{}
	for _, e := range eps {
		if seen[e.Name] {
			return nil, fmt.Errorf("%s: each listener must have a different name, listeners: %s", setting, value)
		}
		seen[e.Name] = true
	}
	if !distinctPorts {
		return eps, nil
	}
	byPort := map[int][]Endpoint{}
	for _, e := range eps {
		if e.Port != 0 {
			byPort[e.Port] = append(byPort[e.Port], e)
		}
	}
	for port, dup := range byPort {
		if len(dup) < 2 {
			continue
		}
		var ips []netip.Addr
		hostnames := 0
		for _, e := range dup {
			if a, err := netip.ParseAddr(e.Host); err == nil {
				ips = append(ips, a)
			} else {
				hostnames++
			}
		}
		if hostnames > 1 {
			return nil, fmt.Errorf("%s: each listener must have a different port, listeners: %s", setting, value)
		}
		if len(ips) > 0 && (len(ips) != 2 || ips[0].Is4() == ips[1].Is4() || hostnames > 0) {
			return nil, fmt.Errorf("%s: each listener must have a different port unless exactly one listener has an IPv4 address and the other an IPv6 address, listeners: %s, port: %d", setting, value, port)
		}
	}
	return eps, nil
}

// ParseProtocolMap parses listener.security.protocol.map
// (NAME:PROTOCOL,...).
func ParseProtocolMap(value string) (map[string]Protocol, error) {
	m := map[string]Protocol{}
	for _, kv := range parseCSV(value) {
		k, v, ok := strings.Cut(kv, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("%s: %q: want LISTENER_NAME:SECURITY_PROTOCOL", ListenerSecurityProtocolMap, kv)
		}
		p, ok := ParseProtocol(v)
		if !ok {
			return nil, fmt.Errorf("%s: invalid security protocol %q for listener %s (want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", ListenerSecurityProtocolMap, v, strings.ToUpper(k))
		}
		name := strings.ToUpper(k)
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("%s: listener %s mapped twice", ListenerSecurityProtocolMap, name)
		}
		m[name] = p
	}
	return m, nil
}

// Config is the validated listener configuration of one broker.
type Config struct {
	// Listeners are the broker listeners (controller listeners excluded),
	// in the order of the listeners setting.
	Listeners []Endpoint
	// Controller are the controller listeners (named in
	// controller.listener.names), in that order.
	Controller []Endpoint
	// Advertised are the advertised broker listeners: advertised.listeners,
	// or the broker listeners when it is not set.
	Advertised []Endpoint
	// Protocols is the effective listener.security.protocol.map.
	Protocols map[string]Protocol
	// InterBroker is the inter-broker listener name.
	InterBroker string
}

// Options are what the caller knows beyond the settings.
type Options struct {
	// Cluster says the node runs a controller quorum (combined broker
	// and controller, as a KRaft node with process.roles=broker,controller).
	Cluster bool
}

// Parse reads and validates the listener settings of configs (Kafka
// names; other keys are ignored) as Kafka's KafkaConfig does. Errors name
// the setting.
func Parse(configs map[string]string, opts Options) (*Config, error) {
	get := func(k string) (string, bool) { v, ok := configs[k]; return strings.TrimSpace(v), ok }
	pmStr, pmSet := get(ListenerSecurityProtocolMap)
	if !pmSet {
		pmStr = defaultListenerProtocolMapStr
	}
	protocols, err := ParseProtocolMap(pmStr)
	if err != nil {
		return nil, err
	}
	var ctrlNames []string
	if v, ok := get(ControllerListenerNames); ok {
		for _, n := range parseCSV(v) {
			ctrlNames = append(ctrlNames, strings.ToUpper(n))
		}
	}
	lstr, ok := get(Listeners)
	if !ok || lstr == "" {
		return nil, fmt.Errorf("%s: no listener (want NAME://host:port,...)", Listeners)
	}
	if !pmSet {
		// Kafka (KRaft, map not set): controller listeners are PLAINTEXT
		// unless SSL or SASL is in use anywhere.
		usesTLSOrSASL := false
		for _, n := range ctrlNames {
			usesTLSOrSASL = usesTLSOrSASL || (n != string(Plaintext) && protocols[n] != "")
		}
		for _, s := range parseCSV(lstr) {
			if m := endpointRE.FindStringSubmatch(s); m != nil {
				if p, ok := ParseProtocol(m[1]); ok && p != Plaintext {
					usesTLSOrSASL = true
				}
			}
		}
		if !usesTLSOrSASL {
			for _, n := range ctrlNames {
				if _, ok := protocols[n]; !ok {
					protocols[n] = Plaintext
				}
			}
		}
	}
	all, err := ParseEndpoints(Listeners, lstr, protocols, true)
	if err != nil {
		return nil, err
	}
	c := &Config{Protocols: protocols}
	for _, e := range all {
		if slices.Contains(ctrlNames, e.Name) {
			c.Controller = append(c.Controller, e)
		} else {
			c.Listeners = append(c.Listeners, e)
		}
	}
	if v, ok := get(AdvertisedListeners); ok && v != "" {
		adv, err := ParseEndpoints(AdvertisedListeners, v, protocols, false)
		if err != nil {
			return nil, err
		}
		for _, e := range adv {
			if !slices.Contains(ctrlNames, e.Name) {
				c.Advertised = append(c.Advertised, e)
			}
		}
	} else {
		c.Advertised = slices.Clone(c.Listeners)
	}

	// The inter-broker listener.
	ibName, ibSet := get(InterBrokerListenerName)
	ibProto, ibProtoSet := get(SecurityInterBrokerProtocol)
	switch {
	case ibSet && ibProtoSet:
		return nil, fmt.Errorf("only one of %s and %s should be set", InterBrokerListenerName, SecurityInterBrokerProtocol)
	case ibSet:
		c.InterBroker = strings.ToUpper(ibName)
		if _, ok := protocols[c.InterBroker]; !ok {
			return nil, fmt.Errorf("%s: listener with name %s not found in %s", InterBrokerListenerName, c.InterBroker, ListenerSecurityProtocolMap)
		}
	case ibProtoSet:
		p, ok := ParseProtocol(ibProto)
		if !ok {
			return nil, fmt.Errorf("%s: invalid security protocol %q (want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)", SecurityInterBrokerProtocol, ibProto)
		}
		c.InterBroker = string(p)
	default:
		c.InterBroker = string(defaultInterBrokerProtocol)
	}

	// Controller listeners.
	if opts.Cluster {
		for _, n := range ctrlNames {
			if !slices.ContainsFunc(c.Controller, func(e Endpoint) bool { return e.Name == n }) {
				return nil, fmt.Errorf("%s must only contain values appearing in the %s configuration (%s is not there)", ControllerListenerNames, Listeners, n)
			}
		}
		if len(ctrlNames) > 1 {
			return nil, fmt.Errorf("%s: weir runs one controller listener; got %s", ControllerListenerNames, strings.Join(ctrlNames, ","))
		}
	} else if len(c.Controller) > 0 {
		return nil, fmt.Errorf("%s: listener %s is a controller listener, but this node runs no controller quorum (set the controller voters, or remove it from %s)", Listeners, c.Controller[0].Name, Listeners)
	}
	if slices.Contains(ctrlNames, c.InterBroker) {
		return nil, fmt.Errorf("%s must not contain the inter-broker listener %s", ControllerListenerNames, c.InterBroker)
	}

	// Broker listeners and their advertised endpoints.
	if len(c.Advertised) == 0 {
		msg := "there must be at least one broker advertised listener"
		if len(ctrlNames) > 0 {
			msg += fmt.Sprintf("; perhaps all listeners appear in %s?", ControllerListenerNames)
		}
		return nil, errors.New(msg)
	}
	advNames := names(c.Advertised)
	if !slices.Contains(advNames, c.InterBroker) {
		return nil, fmt.Errorf("%s must be a listener name defined in %s (it is %s). The valid options based on currently configured listeners are %s",
			InterBrokerListenerName, AdvertisedListeners, c.InterBroker, strings.Join(advNames, ","))
	}
	lnNames := names(c.Listeners)
	for _, n := range advNames {
		if !slices.Contains(lnNames, n) {
			return nil, fmt.Errorf("%s listener names must be equal to or a subset of the ones defined in %s. Found %s. The valid options based on the current configuration are %s",
				AdvertisedListeners, Listeners, strings.Join(advNames, ","), strings.Join(lnNames, ","))
		}
	}
	for _, e := range c.Advertised {
		if e.Host == "0.0.0.0" || e.Host == "::" {
			return nil, fmt.Errorf("%s cannot use the nonroutable meta-address %s (%s). Use a routable IP address", AdvertisedListeners, e.Host, e)
		}
	}
	return c, nil
}

func names(eps []Endpoint) []string {
	out := make([]string, 0, len(eps))
	for _, e := range eps {
		out = append(out, e.Name)
	}
	return out
}

// Listener returns the broker listener named name.
func (c *Config) Listener(name string) (Endpoint, bool) {
	i := slices.IndexFunc(c.Listeners, func(e Endpoint) bool { return e.Name == name })
	if i < 0 {
		return Endpoint{}, false
	}
	return c.Listeners[i], true
}

// AdvertisedFor returns the advertised endpoint of listener name.
func (c *Config) AdvertisedFor(name string) (Endpoint, bool) {
	i := slices.IndexFunc(c.Advertised, func(e Endpoint) bool { return e.Name == name })
	if i < 0 {
		return Endpoint{}, false
	}
	return c.Advertised[i], true
}

// SettingNames are the listener settings Parse reads, sorted.
func SettingNames() []string {
	s := []string{Listeners, AdvertisedListeners, ListenerSecurityProtocolMap, InterBrokerListenerName, SecurityInterBrokerProtocol, ControllerListenerNames}
	sort.Strings(s)
	return s
}

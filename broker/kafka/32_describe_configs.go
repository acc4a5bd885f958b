package kafka

// DescribeConfigs (key 32), versions 0-4.
//
// Resources:
//
//   - TOPIC: every topic config Kafka defines (or the names asked for;
//     unknown names are left out, as Kafka does) with its effective value
//     and source: DYNAMIC_TOPIC_CONFIG for the topic's overrides,
//     STATIC_BROKER_CONFIG when a broker config set at startup supplies it
//     (log.retention.hours, ...), DEFAULT_CONFIG otherwise. Unknown topic:
//     UNKNOWN_TOPIC_OR_PARTITION.
//   - BROKER: this node's id: every broker config weir knows (and the
//     dynamic-only or custom ones set dynamically), with the effective
//     value and source (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
//     STATIC_BROKER_CONFIG, DEFAULT_CONFIG), node.id, broker.id, listeners
//     and advertised.listeners filled in from the running server; only the
//     dynamically updatable ones are not read-only. "": the cluster-wide
//     dynamic defaults that are set, as Kafka lists them. Another node id:
//     INVALID_REQUEST.
//   - BROKER_LOGGER and anything else: INVALID_REQUEST.
//
// v1+ include synonyms when asked, in Kafka's ConfigHelper order (topic
// override, then per source — dynamic per-broker, dynamic default, static,
// default — the broker synonyms); v3+ config types and, when asked,
// documentation. v0 reports is_default. Passwords and custom broker
// configs are sensitive (no value), as in Kafka.

import (
	"net"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/broker/acl"
	"weir/broker/topicconfig"
)

func init() { register(kmsg.DescribeConfigs.Int16(), 0, 4, handleDescribeConfigs) }

func handleDescribeConfigs(s *Server, r *Request) (kmsg.Response, error) {
	req := r.Kmsg.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	synonyms := req.Version >= 1 && req.IncludeSynonyms
	docs := req.Version >= 3 && req.IncludeDocumentation
	img := s.meta.Image()
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var entries []topicconfig.Entry
		e := s.configDenied(r, acl.OpDescribeConfigs, rr.ResourceType, rr.ResourceName)
		switch {
		case e != nil:
		case rr.ResourceType == resourceTopic:
			overrides, ok := topicOverrides(img, rr.ResourceName)
			if !ok {
				e = kafkaErr(kerr.UnknownTopicOrPartition, "topic %q does not exist", rr.ResourceName)
				break
			}
			res, err := s.cfg.BrokerConfig.Resolve(overrides)
			if err != nil {
				// Stored overrides are validated when set; this only
				// happens if the rules changed since.
				e = kafkaErr(kerr.InvalidConfig, "topic %q has invalid stored configs: %v", rr.ResourceName, err)
				break
			}
			entries = res.Describe(rr.ConfigNames, synonyms, docs)
		case rr.ResourceType == resourceBroker:
			if e = s.checkBrokerResource(rr.ResourceName); e != nil {
				break
			}
			if rr.ResourceName == "" {
				entries = s.cfg.BrokerConfig.DescribeDefault(rr.ConfigNames, synonyms, docs)
				break
			}
			entries = s.describeBroker(rr.ConfigNames, synonyms, docs)
		case rr.ResourceType == resourceBrokerLogger:
			e = kafkaErr(kerr.InvalidRequest, "weir does not expose broker loggers")
		default:
			e = kafkaErr(kerr.InvalidRequest, "unsupported config resource type %d", rr.ResourceType)
		}
		sr.ErrorCode, sr.ErrorMessage = e.codeOrZero(), e.msgPtr()
		if e == nil {
			sr.Configs = describeEntries(entries, synonyms, docs)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

// describeBroker lists the broker's configs with the runtime values the
// static configuration does not carry.
func (s *Server) describeBroker(names []string, synonyms, docs bool) []topicconfig.Entry {
	runtime := map[string]string{
		topicconfig.BrokerNodeID: strconv.Itoa(int(s.cfg.NodeID)),
		"broker.id":              strconv.Itoa(int(s.cfg.NodeID)),
	}
	var lns, adv []string
	for _, l := range s.bound {
		lns = append(lns, l.cfg.Name+"://"+l.ln.Addr().String())
		if !l.cfg.NoAdvertise {
			adv = append(adv, l.cfg.Name+"://"+net.JoinHostPort(l.adv.Host, strconv.Itoa(int(l.adv.Port))))
		}
	}
	if len(lns) > 0 {
		runtime[topicconfig.BrokerListeners] = strings.Join(lns, ",")
	}
	if len(adv) > 0 {
		runtime[topicconfig.BrokerAdvertisedListeners] = strings.Join(adv, ",")
	}
	entries := s.cfg.BrokerConfig.Describe(names, synonyms, docs)
	for i := range entries {
		e := &entries[i]
		if _, src, ok := s.cfg.BrokerConfig.Value(e.Name); ok && src != topicconfig.SourceDefault {
			continue // set explicitly (at startup or dynamically): keep it
		}
		if v, ok := runtime[e.Name]; ok {
			e.Value, e.Source = &v, topicconfig.SourceStaticBroker
			if synonyms {
				e.Synonyms = append([]topicconfig.EntrySynonym{{Name: e.Name, Value: &v, Source: topicconfig.SourceStaticBroker}}, e.Synonyms...)
			}
		}
	}
	wantBrokerID := len(names) == 0
	for _, n := range names {
		wantBrokerID = wantBrokerID || n == "broker.id"
	}
	if wantBrokerID { // Kafka's older name for node.id; not in topicconfig
		v := runtime["broker.id"]
		e := topicconfig.Entry{Name: "broker.id", Value: &v, Source: topicconfig.SourceStaticBroker, ReadOnly: true, Type: topicconfig.TypeInt}
		if docs {
			e.Doc = "This broker's id (same as node.id)."
		}
		if synonyms {
			e.Synonyms = []topicconfig.EntrySynonym{{Name: "broker.id", Value: &v, Source: topicconfig.SourceStaticBroker}}
		}
		entries = append(entries, e)
	}
	return entries
}

func describeEntries(entries []topicconfig.Entry, synonyms, docs bool) []kmsg.DescribeConfigsResponseResourceConfig {
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(entries))
	for _, e := range entries {
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.ReadOnly, c.IsSensitive = e.Name, e.Value, e.ReadOnly, e.Sensitive
		c.IsDefault = e.IsDefault()
		c.Source = kmsg.ConfigSource(e.Source)
		c.ConfigType = kmsg.ConfigType(e.Type)
		if docs {
			d := e.Doc
			c.Documentation = &d
		}
		if synonyms {
			for _, sy := range e.Synonyms {
				cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				cs.Name, cs.Value, cs.Source = sy.Name, sy.Value, kmsg.ConfigSource(sy.Source)
				c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
			}
		}
		out = append(out, c)
	}
	return out
}

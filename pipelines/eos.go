package pipelines

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"weir/connectors"
)

// exactly_once on a stream block (metaExactlyOnce, components.go) and on a sink of the
// "kafka" kind (a setting of its spec, connectors/kafkasink): an
// aggregating stream runs its streams application with
// streams.Config.ExactlyOnce (EOS v2: results, changelogs, repartition
// records and input offsets in one transaction per commit interval); a
// stateless stream and a kafka sink run their sink task with
// connectors.SinkOptions.ExactlyOnce (the records written and the offsets
// consumed in one transaction per flush). Readers see each result once
// when they read read_committed.

// sinkExactlyOnce checks a sink's exactly_once setting: only a sink that
// writes to the cluster it reads can commit both in one transaction.
func sinkExactlyOnce(s *Sink, cfg connectors.Config, brokers []string) (bool, error) {
	if _, ok := s.Connector.Spec.Field(metaExactlyOnce); !ok || !cfg.Bool(metaExactlyOnce) {
		return false, nil
	}
	own := cfg.Strings(brokersSetting)
	if len(own) > 0 && len(brokers) > 0 && !sameSet(own, brokers) {
		return false, fmt.Errorf("%w: sink %q: exactly_once needs the sink to write to the cluster it reads (brokers %v), not %v", connectors.ErrConfig, s.Name, brokers, own)
	}
	return true, nil
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// sinkExactlyOnceDiags refuses exactly_once = true on a sink whose
// brokers name another cluster than the pipeline's (the broker block's
// brokers, or the embedded broker when there is none): the consumed
// offsets and the records written cannot share a transaction across
// clusters.
func (l *loader) sinkExactlyOnceDiags(c *hcl.BodyContent, cfg connectors.Config) hcl.Diagnostics {
	a, ok := c.Attributes[metaExactlyOnce]
	if !ok || cfg == nil || !cfg.Bool(metaExactlyOnce) {
		return nil
	}
	own := cfg.Strings(brokersSetting)
	if _, set := c.Attributes[brokersSetting]; !set || len(own) == 0 {
		return nil
	}
	var run []string
	if l.cfg.Broker != nil {
		run = l.cfg.Broker.External
	}
	if len(run) > 0 && sameSet(own, run) {
		return nil
	}
	where := "the embedded broker"
	if len(run) > 0 {
		where = "the broker block's brokers (" + strings.Join(run, ", ") + ")"
	}
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "exactly_once across clusters",
		Detail:  fmt.Sprintf("exactly_once commits the records the sink writes and the offsets it consumed in one transaction, so the sink must write to the cluster it reads, %s, not %s. Remove brokers, or exactly_once.", where, strings.Join(own, ", ")),
		Subject: a.Expr.Range().Ptr()}}
}
